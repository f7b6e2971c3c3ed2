;; Tail calls: a million return_calls must run in constant depth.
(module
  (type $t (func (param i64 i64) (result i64)))
  (table 1 funcref)
  (elem (i32.const 0) $loop_ind)
  (func $loop (type $t)
    (if (result i64) (i64.eqz (local.get 0)) (then (local.get 1))
      (else (return_call $loop (i64.sub (local.get 0) (i64.const 1)) (i64.add (local.get 1) (local.get 0))))))
  (func $loop_ind (type $t)
    (if (result i64) (i64.eqz (local.get 0)) (then (local.get 1))
      (else (return_call_indirect (type $t) (i64.sub (local.get 0) (i64.const 1)) (i64.xor (local.get 1) (local.get 0)) (i32.const 0)))))
  (func (export "run_tail") (result i64) (return_call $loop (i64.const 100000) (i64.const 0)))
  (func (export "run_tail_indirect") (result i64) (call $loop_ind (i64.const 100000) (i64.const 1)))
)
