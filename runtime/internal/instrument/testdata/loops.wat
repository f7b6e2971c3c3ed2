;; Control flow: nested loops, br_if, br_table, if/else, blocks with
;; results, branches to the function label, dead code after br.
(module
  (func $collatz (param $n i64) (result i64) (local $steps i64)
    (block $done
      (loop $next
        (br_if $done (i64.le_u (local.get $n) (i64.const 1)))
        (if (i64.eqz (i64.rem_u (local.get $n) (i64.const 2)))
          (then (local.set $n (i64.div_u (local.get $n) (i64.const 2))))
          (else (local.set $n (i64.add (i64.mul (local.get $n) (i64.const 3)) (i64.const 1)))))
        (local.set $steps (i64.add (local.get $steps) (i64.const 1)))
        (br $next)
        (unreachable)))
    (local.get $steps))

  (func (export "run_collatz") (result i64) (local $i i64) (local $sum i64)
    (loop $l
      (local.set $sum (i64.add (local.get $sum) (call $collatz (local.get $i))))
      (local.set $i (i64.add (local.get $i) (i64.const 1)))
      (br_if $l (i64.lt_u (local.get $i) (i64.const 3000))))
    (local.get $sum))

  ;; br_table dispatch in a loop, including a branch to the function label.
  (func $classify (param $x i32) (result i32)
    (block $d (block $c (block $b (block $a
      (br_table $a $b $c $d (i32.rem_u (local.get $x) (i32.const 5))))
      (return (i32.const 10)))
      (return (i32.const 20)))
      (br 1 (i32.const 30)))
    (i32.add (i32.const 40) (call $pick (local.get $x))))

  ;; br_table whose targets include the function's own label.
  (func $pick (param i32) (result i32)
    (block $x (result i32)
      (br_table $x 1 $x (i32.const 7) (i32.rem_u (local.get 0) (i32.const 3))))
    (i32.const 100)
    (i32.add))

  (func (export "run_brtable") (result i32) (local $i i32) (local $acc i32)
    (loop $l
      (local.set $acc (i32.add (i32.mul (local.get $acc) (i32.const 31))
                               (call $classify (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.ne (local.get $i) (i32.const 1000))))
    (local.get $acc))

  ;; Block with a result value branched out of by br_if.
  (func (export "run_blockresult") (result i32) (local $i i32) (local $r i32)
    (loop $l
      (local.set $r (i32.add (local.get $r)
        (block (result i32)
          (br_if 0 (i32.const 7) (i32.eqz (i32.and (local.get $i) (i32.const 1))))
          (drop)
          (i32.const 3))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_s (local.get $i) (i32.const 101))))
    (local.get $r))

  ;; Trap of the guest's own: must stay a trap with fuel unexhausted.
  (func (export "run_trap") (result i32)
    (i32.div_s (i32.const 1) (i32.const 0)))

  (func (export "run_unreachable")
    (if (i32.const 1) (then (unreachable))))

  ;; Spins forever: only fuel or the watchdog ends it.
  (func (export "spin") (loop $l (br $l)))

  ;; Spins in a loop that does some arithmetic per iteration.
  (func (export "count") (param $n i64) (result i64) (local $i i64) (local $acc i64)
    (block $out
      (loop $l
        (br_if $out (i64.ge_u (local.get $i) (local.get $n)))
        (local.set $acc (i64.xor (i64.mul (local.get $acc) (i64.const 6364136223846793005)) (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $l)))
    (local.get $acc))
)
