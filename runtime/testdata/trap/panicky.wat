;; A tool whose call traps in a named function, two calls deep: assembled
;; with its name section (testwasm.WATNamed), so the trap can name
;; $panicky. Called with {} it answers "pong", with anything longer it
;; traps.
(module
  (memory (export "memory") 1)
  (global $next (mut i32) (i32.const 4096))
  (func (export "warden_alloc") (param $size i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $next))
    (global.set $next (i32.add (global.get $next) (local.get $size)))
    (local.get $ptr))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (data (i32.const 16) "{\"tools\":[{\"name\":\"panicky\",\"description\":\"traps\",\"inputSchema\":{\"type\":\"object\"}}]}")
  (data (i32.const 2048) "{\"content\":[{\"type\":\"text\",\"text\":\"pong\"}]}")
  (func (export "warden_describe") (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const 84)))
  (func $panicky (param $depth i32)
    (if (i32.eqz (local.get $depth)) (then unreachable))
    (call $panicky (i32.sub (local.get $depth) (i32.const 1))))
  (func (export "warden_call") (param $request i64) (result i64)
    (if (i32.gt_u (i32.wrap_i64 (local.get $request)) (i32.const 33))
      (then (call $panicky (i32.const 1))))
    (i64.or (i64.shl (i64.const 2048) (i64.const 32)) (i64.const 43))))
