;; Dispatch loops, the shape Go gives every function: a loop whose body
;; starts with blocks, then br_table on a local, and jumps written as
;; "i32.const K; local.set $pc; br $loop". The pass sends a jump straight
;; to the block end the table would pick when that block is still open
;; (a forward jump) and the jump does not enter a loop from outside it;
;; the counts in dispatch_test.go say which jumps qualify. run_* exports
;; take no arguments (TestDifferentialWAT).
(module
  ;; A counted loop entered at its test: the jump r0 -> r2 enters the loop
  ;; (through the dispatch), r2 -> r3 leaves it (direct), r2 -> r1 jumps
  ;; back (through the dispatch).
  (func $count (export "count") (param $n i32) (result i32)
    (local $pc i32) (local $i i32) (local $acc i32)
    (loop $top
      (block $r3
        (block $r2
          (block $r1
            (block $r0
              (br_table $r0 $r1 $r2 $r3 (local.get $pc)))
            ;; r0: entry
            (local.set $acc (i32.const 7))
            (local.set $pc (i32.const 2))
            (br $top))
          ;; r1: the loop body
          (local.set $acc (i32.add (i32.mul (local.get $acc) (i32.const 31)) (local.get $i)))
          (local.set $i (i32.add (local.get $i) (i32.const 1))))
        ;; r2: the loop test
        (if (i32.lt_u (local.get $i) (local.get $n))
          (then (local.set $pc (i32.const 1)) (br $top)))
        (local.set $pc (i32.const 3))
        (br $top))
      ;; r3: exit
      (return (local.get $acc)))
    (unreachable))
  (func (export "run_count") (result i32) (call $count (i32.const 1000)))

  ;; A dispatch loop that jumps back for ever: r0 -> r1 is direct, r1 ->
  ;; r0 goes through the loop, whose check must stop it.
  (func (export "dispatch_spin") (local $pc i32)
    (loop $top
      (block $r1
        (block $r0
          (br_table $r0 $r1 (local.get $pc)))
        (local.set $pc (i32.const 1))
        (br $top))
      (local.set $pc (i32.const 0))
      (br $top)))

;; Out-of-range values take the default; a table entry naming the loop
  ;; or a label outside it is not a block the jump can reach directly.
  ;; Direct: 100 (the default, r1). Not: 2 (the loop: never taken, it
  ;; would dispatch for ever), 3 (the function's block).
  (func $edges (export "edges") (param $x i32) (result i32)
    (local $pc i32) (local $steps i32)
    (block $out
      (loop $top
        (block $r1
          (block $r0
            (br_table $r0 $r0 $top $out $r1 (local.get $pc)))
          ;; r0
          (local.set $steps (i32.add (local.get $steps) (i32.const 1)))
          (if (i32.eq (local.get $x) (i32.const 0))
            (then (local.set $pc (i32.const 100)) (br $top)))
          (if (i32.eq (local.get $x) (i32.const 1000))
            (then (local.set $pc (i32.const 2)) (br $top)))
          (local.set $pc (i32.const 3))
          (br $top))
        ;; r1
        (return (i32.add (i32.mul (local.get $steps) (i32.const 100)) (local.get $pc)))))
    (i32.add (i32.mul (local.get $steps) (i32.const 1000)) (local.get $pc)))
  (func (export "run_edges") (result i32)
    (i32.add (call $edges (i32.const 0)) (call $edges (i32.const 1))))

  ;; Not dispatch jumps, so not redirected: the value set by local.tee,
  ;; another local set last, another instruction before the br. Direct:
  ;; the last jump of r0 and the jump of r1.
  (func $lookalikes (export "lookalikes") (param $x i32) (result i32)
    (local $pc i32) (local $other i32) (local $n i32)
    (loop $top
      (block $r2
        (block $r1
          (block $r0
            (br_table $r0 $r1 $r2 (local.get $pc)))
          ;; r0
          (local.set $n (i32.add (local.get $n) (i32.const 1)))
          (if (i32.eq (local.get $x) (i32.const 0))
            (then (drop (local.tee $pc (i32.const 1))) (br $top)))
          (if (i32.eq (local.get $x) (i32.const 1))
            (then (local.set $pc (i32.const 1)) (local.set $other (i32.const 2)) (br $top)))
          (if (i32.eq (local.get $x) (i32.const 2))
            (then (local.set $pc (i32.const 1)) (nop) (br $top)))
          (local.set $pc (i32.const 2))
          (br $top))
        ;; r1
        (local.set $n (i32.add (local.get $n) (i32.const 10)))
        (local.set $pc (i32.const 2))
        (br $top))
      ;; r2
      (return (i32.add (i32.mul (local.get $n) (i32.const 10)) (local.get $pc))))
    (unreachable))
  (func (export "run_lookalikes") (result i32)
    (i32.add (i32.add (i32.add (call $lookalikes (i32.const 0)) (call $lookalikes (i32.const 1)))
      (call $lookalikes (i32.const 2))) (call $lookalikes (i32.const 3))))

  ;; Not dispatch loops: the header does more than dispatch, or the loop
  ;; has a result.
  (func $busy (export "busy") (param $x i32) (result i32)
    (local $pc i32) (local $n i32)
    (loop $top
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (block $r1
        (block $r0
          (br_table $r0 $r1 (local.get $pc)))
        (local.set $pc (i32.const 1))
        (br $top))
      (return (i32.add (local.get $x) (local.get $n))))
    (unreachable))
  (func (export "run_busy") (result i32) (call $busy (i32.const 5)))

  (func $valued (export "valued") (param $x i32) (result i32)
    (local $pc i32)
    (loop $top (result i32)
      (block $r1
        (block $r0
          (br_table $r0 $r1 (local.get $pc)))
        (local.set $pc (i32.const 1))
        (br $top))
      (i32.add (local.get $x) (local.get $pc))))
  (func (export "run_valued") (result i32) (call $valued (i32.const 41)))

  ;; Nested loops: b1 is the outer loop's head, b2 the inner one's. The
  ;; jump b1 -> b2 enters the inner loop from the outer one (through the
  ;; dispatch); b1 -> b5 leaves the outer loop and b2 -> b4 the inner one
  ;; (direct); b3 -> b2 and b4 -> b1 jump back.
  (func $nested (export "nested") (param $n i32) (result i32)
    (local $pc i32) (local $i i32) (local $j i32) (local $acc i32)
    (loop $top
      (block $b5
        (block $b4
          (block $b3
            (block $b2
              (block $b1
                (block $b0
                  (br_table $b0 $b1 $b2 $b3 $b4 $b5 (local.get $pc)))
                (local.set $i (i32.const 0)))
              ;; b1: the outer loop's head
              (if (i32.ge_u (local.get $i) (local.get $n))
                (then (local.set $pc (i32.const 5)) (br $top)))
              (local.set $j (i32.const 0))
              (local.set $pc (i32.const 2))
              (br $top))
            ;; b2: the inner loop's head
            (if (i32.ge_u (local.get $j) (i32.const 3))
              (then (local.set $pc (i32.const 4)) (br $top))))
          ;; b3: the inner loop's body
          (local.set $acc (i32.add (i32.mul (local.get $acc) (i32.const 7)) (i32.add (local.get $i) (local.get $j))))
          (local.set $j (i32.add (local.get $j) (i32.const 1)))
          (local.set $pc (i32.const 2))
          (br $top))
        ;; b4: the outer loop's latch
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (local.set $pc (i32.const 1))
        (br $top))
      ;; b5: exit
      (return (local.get $acc)))
    (unreachable))
  (func (export "run_nested") (result i32) (call $nested (i32.const 10)))

  ;; Two dispatch loops in one body, each with a loop and a direct jump
  ;; out of it; the analysis sorts the jumps by dispatch.
  (func $twice (export "twice") (param $n i32) (result i32)
    (local $pc i32) (local $qc i32) (local $i i32) (local $acc i32)
    (loop $first
      (block $a1
        (block $a0
          (br_table $a0 $a1 (local.get $pc)))
        ;; a0: count up to n, then leave
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (if (i32.ge_u (local.get $i) (local.get $n))
          (then (local.set $pc (i32.const 1)) (br $first)))
        (local.set $pc (i32.const 0))
        (br $first)))
    (loop $second
      (block $b1
        (block $b0
          (br_table $b0 $b1 (local.get $qc)))
        ;; b0: count down to 0, then leave
        (local.set $acc (i32.add (i32.mul (local.get $acc) (i32.const 3)) (local.get $i)))
        (local.set $i (i32.sub (local.get $i) (i32.const 1)))
        (if (i32.eqz (local.get $i))
          (then (local.set $qc (i32.const 1)) (br $second)))
        (local.set $qc (i32.const 0))
        (br $second)))
    (local.get $acc))
  (func (export "run_twice") (result i32) (call $twice (i32.const 9)))
)
