;; Multi-value: functions and blocks with several results, blocks with
;; params (type-index block types), typed select, reference types, misc ops.
(module
  (type $pair (func (param i32 i32) (result i32 i32)))
  (global $g (mut i64) (i64.const 5))
  (global $h (mut i32) (i32.const 0))
  (global $c i32 (i32.const 9))
  (table 1 externref)
  (func $swap (type $pair) (local.get 1) (local.get 0))
  (func $divmod (param i32 i32) (result i32 i32)
    (i32.div_u (local.get 0) (local.get 1)) (i32.rem_u (local.get 0) (local.get 1)))

  (func (export "run_multi") (result i32 i32 i64)
    (call $swap (i32.const 3) (i32.const 4))
    (block (type $pair) (call $divmod))
    (global.set $g (i64.add (global.get $g) (i64.const 1)))
    (global.get $g))

  (func (export "run_loop_params") (result i32)
    (i32.const 0) (i32.const 10)
    (loop $l (param i32 i32) (result i32)
      ;; stack: acc n
      (call $swap) ;; n acc
      (block (param i32 i32) (result i32 i32) (call $swap)) ;; acc n
      (if (param i32 i32) (result i32) (i32.const 1)
        (then (call $step))
        (else (drop))))
    )
  (func $step (param $acc i32) (param $n i32) (result i32)
    (if (result i32) (i32.eqz (local.get $n)) (then (local.get $acc))
      (else (return_call $step (i32.add (local.get $acc) (local.get $n)) (i32.sub (local.get $n) (i32.const 1))))))

  (func (export "run_misc") (result i64)
    (global.set $h (i32.extend8_s (i32.const 0xff)))
    (table.set 0 (i32.const 0) (ref.null extern))
    (i64.add
      (i64.extend_i32_s (select (result i32) (global.get $h) (global.get $c) (ref.is_null (table.get 0 (i32.const 0)))))
      (i64.add (i64.trunc_sat_f64_u (f64.const -5.5)) (i64.extend16_s (i64.const 0x8001)))))
)
