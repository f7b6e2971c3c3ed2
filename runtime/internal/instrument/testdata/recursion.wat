;; Calls: direct recursion, mutual recursion, call_indirect, and unbounded
;; recursion that only the depth bound (or the engine) stops.
(module
  (type $i2i (func (param i32) (result i32)))
  (table 2 funcref)
  (elem (i32.const 0) $fib $even)

  (func $fib (type $i2i)
    (if (result i32) (i32.lt_u (local.get 0) (i32.const 2))
      (then (local.get 0))
      (else (i32.add (call $fib (i32.sub (local.get 0) (i32.const 1)))
                     (call_indirect (type $i2i) (i32.sub (local.get 0) (i32.const 2)) (i32.const 0))))))

  (func $even (type $i2i)
    (if (result i32) (i32.eqz (local.get 0)) (then (i32.const 1))
      (else (call $odd (i32.sub (local.get 0) (i32.const 1))))))
  (func $odd (param i32) (result i32)
    (if (result i32) (i32.eqz (local.get 0)) (then (i32.const 0))
      (else (return (call $even (i32.sub (local.get 0) (i32.const 1)))))))

  (func (export "run_fib") (result i32) (call $fib (i32.const 20)))
  (func (export "run_mutual") (result i32)
    (i32.add (call_indirect (type $i2i) (i32.const 501) (i32.const 1))
             (i32.mul (i32.const 2) (call $even (i32.const 600)))))

  ;; Recursion 500 deep, then back.
  (func $down (param i32) (result i32)
    (if (result i32) (i32.eqz (local.get 0)) (then (i32.const 0))
      (else (i32.add (i32.const 1) (call $down (i32.sub (local.get 0) (i32.const 1)))))))
  (func (export "run_deep") (result i32) (call $down (i32.const 500)))

  (func $bomb (param i64) (result i64)
    (i64.add (call $bomb (i64.add (local.get 0) (i64.const 1))) (i64.const 1)))
  (func (export "bomb") (result i64) (call $bomb (i64.const 0)))
)
