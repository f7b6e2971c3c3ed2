;; Where the fuel counter must be right: loops in leaf functions, loops
;; through calls (direct, indirect, tail), br_table loops, loops around
;; host functions, and callees whose fuel the host must see.
(module
  (import "env" "observe" (func $observe (param i32)))
  (type $i2i (func (param i32) (result i32)))
  (type $v (func))
  (table 3 funcref)
  (elem (i32.const 0) $leafwork $tail_indirect $leaf_forever)

  ;; A leaf (no calls) that never returns.
  (func $leaf_forever (loop $l (br $l)))
  (func (export "leaf_spin") (call $leaf_forever))

  ;; A leaf with a loop of n iterations.
  (func $leaf_loop (param $n i32) (result i32) (local $i i32) (local $acc i32)
    (block $out
      (loop $l
        (br_if $out (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $acc (i32.add (i32.mul (local.get $acc) (i32.const 31)) (local.get $i)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l)))
    (local.get $acc))
  (func (export "leaf_count") (param $n i32) (result i32) (call $leaf_loop (local.get $n)))

  ;; A straight-line leaf with branches.
  (func $leafwork (type $i2i)
    (if (result i32) (i32.and (local.get 0) (i32.const 1))
      (then (i32.add (i32.mul (local.get 0) (i32.const 3)) (i32.const 1)))
      (else (i32.shr_u (local.get 0) (i32.const 1)))))

  ;; A loop whose body is a call_indirect to a leaf.
  (func (export "indirect_spin") (local $x i32)
    (local.set $x (i32.const 27))
    (loop $l
      (local.set $x (i32.add (call_indirect (type $i2i) (local.get $x) (i32.const 0)) (i32.const 2)))
      (br $l)))

  ;; A loop made only of tail calls through the table.
  (func $tail_indirect (type $v) (return_call_indirect (type $v) (i32.const 1)))
  (func (export "tail_spin") (call $tail_indirect))

  ;; Unbounded recursion through call_indirect into a leaf loop.
  (func (export "indirect_leaf_spin") (call_indirect (type $v) (i32.const 2)))

  ;; A loop driven by br_table.
  (func (export "brtable_spin") (local $i i32)
    (loop $l
      (block $a
        (block $b
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br_table $a $b $l (i32.rem_u (local.get $i) (i32.const 3))))
        (br $l))
      (br $l)))

  ;; A loop that calls a host function forever.
  (func (export "host_spin") (local $i i32)
    (loop $l
      (call $observe (local.get $i))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l)))

  ;; n rounds of: a callee's loop of m iterations, then the host.
  (func (export "callee_then_host") (param $n i32) (param $m i32) (local $i i32)
    (block $out
      (loop $l
        (br_if $out (i32.ge_u (local.get $i) (local.get $n)))
        (drop (call $leaf_loop (local.get $m)))
        (call $observe (local.get $i))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l))))
)
