;; SIMD: v128.const, shuffle, lanes, load/store lane, arithmetic.
(module
  (memory 1)
  (func (export "run_simd") (result i64) (local $v v128) (local $w v128)
    (local.set $v (v128.const i32x4 1 2 3 4))
    (local.set $w (i8x16.shuffle 0 1 2 3 8 9 10 11 4 5 6 7 12 13 14 15 (local.get $v) (local.get $v)))
    (local.set $v (i32x4.add (local.get $v) (i32x4.mul (local.get $w) (i32x4.splat (i32.const 10)))))
    (v128.store offset=16 (i32.const 0) (local.get $v))
    (local.set $w (v128.load32_lane 2 (i32.const 16) (v128.const i64x2 0 0)))
    (v128.store64_lane 1 (i32.const 64) (local.get $v))
    (local.set $v (f32x4.sqrt (f32x4.convert_i32x4_u (local.get $v))))
    (i64.add
      (i64.add (i64.extend_i32_u (i32x4.extract_lane 2 (local.get $w)))
               (i64.load (i32.const 64)))
      (i64.add (i64.trunc_sat_f32_s (f32x4.extract_lane 3 (local.get $v)))
               (i64.extend_i32_u (i8x16.bitmask (i8x16.replace_lane 15 (v128.const i8x16 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0) (i32.const -1)))))))

  (func (export "run_simd_loop") (result i32) (local $i i32) (local $acc v128)
    (loop $l
      (local.set $acc (i16x8.add_sat_u (local.get $acc) (i16x8.splat (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 300))))
    (i32.add (i16x8.extract_lane_u 0 (local.get $acc)) (i32x4.all_true (local.get $acc))))
)
