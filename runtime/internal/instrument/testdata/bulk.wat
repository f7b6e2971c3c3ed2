;; Bulk memory with a passive segment (so a DataCount section), memory.grow
;; and memory.size, table instructions.
(module
  (memory 1 4)
  (data $hello "hello, bulk memory!")
  (data (i32.const 100) "active")
  (table $t 4 8 funcref)
  (elem $e func $one $two $three)
  (func $one (result i32) (i32.const 1))
  (func $two (result i32) (i32.const 2))
  (func $three (result i32) (i32.const 3))

  (func $sum (param $p i32) (param $n i32) (result i64) (local $acc i64)
    (block $out (loop $l
      (br_if $out (i32.eqz (local.get $n)))
      (local.set $acc (i64.add (i64.mul (local.get $acc) (i64.const 131))
                               (i64.load8_u (local.get $p))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br $l)))
    (local.get $acc))

  (func (export "run_bulk") (result i64)
    (memory.init $hello (i32.const 1000) (i32.const 0) (i32.const 19))
    (memory.copy (i32.const 2000) (i32.const 1000) (i32.const 19))
    (memory.fill (i32.const 2005) (i32.const 0x2a) (i32.const 3))
    (memory.copy (i32.const 2010) (i32.const 100) (i32.const 6))
    (call $sum (i32.const 2000) (i32.const 32)))

  (func (export "run_drop") (result i32)
    (data.drop $hello)
    (memory.init $hello (i32.const 0) (i32.const 0) (i32.const 0))
    (i32.const 1))

  (func (export "run_grow") (result i32) (local $r i32)
    ;; 1 page; grow to 3, fail past the max of 4, grow by 0.
    (local.set $r (i32.mul (memory.size) (i32.const 1000)))
    (local.set $r (i32.add (local.get $r) (i32.mul (memory.grow (i32.const 2)) (i32.const 100))))
    (local.set $r (i32.add (local.get $r) (i32.mul (memory.grow (i32.const 2)) (i32.const 10))))
    (local.set $r (i32.add (local.get $r) (memory.grow (i32.const 0))))
    (i32.store (i32.const 131072) (i32.const 7))
    (i32.add (local.get $r) (i32.mul (memory.size) (i32.load (i32.const 131072)))))

  (func (export "run_grow_oob") (result i32)
    (drop (memory.grow (i32.const 1)))
    (i32.load (i32.const 200000)))

  (func (export "run_fill_oob")
    (memory.fill (i32.const 65000) (i32.const 1) (i32.const 1000)))

  (func (export "run_table") (result i32) (local $r i32)
    (table.init $t $e (i32.const 0) (i32.const 0) (i32.const 3))
    (table.copy (i32.const 3) (i32.const 0) (i32.const 1))
    (local.set $r (i32.mul (table.grow $t (ref.func $two) (i32.const 2)) (i32.const 100)))
    (table.fill $t (i32.const 4) (ref.func $three) (i32.const 2))
    (table.set $t (i32.const 0) (table.get $t (i32.const 5)))
    (elem.drop $e)
    (i32.add (i32.add (local.get $r) (table.size $t))
      (i32.add (call_indirect (result i32) (i32.const 0))
               (call_indirect (result i32) (i32.const 3)))))
)
