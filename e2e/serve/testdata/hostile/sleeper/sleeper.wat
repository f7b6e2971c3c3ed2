;; Sleeps an hour in WASI poll_oneoff, then answers at once (straight-line
;; code: no loop header or function entry where the meter would stop it).
;; Only its deadline stops it; a call that outlives it is a timeout.
(module
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (global $next (mut i32) (i32.const 40000))
  (func (export "warden_alloc") (param $size i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $next))
    (global.set $next (i32.add (global.get $next) (local.get $size)))
    (local.get $ptr))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (data (i32.const 16) "{\22tools\22:[{\22name\22:\22sleeper\22,\22description\22:\22Sleeps an hour in WASI poll_oneoff, then answers at once: only its deadline stops it.\22,\22inputSchema\22:{\22type\22:\22object\22}}]}")
  (data (i32.const 2048) "{\22content\22:[{\22type\22:\22text\22,\22text\22:\22woke\22}]}")
  (func (export "warden_describe") (result i64) (i64.const 68719476900))
  (func (export "warden_call") (param i64) (result i64)
    ;; one relative clock subscription, an hour away, at [1024, 1072)
    (i32.store (i32.const 1040) (i32.const 1)) ;; clock id: monotonic
    (i64.store (i32.const 1048) (i64.const 3600000000000)) ;; timeout: 1 h
    (drop (call $poll (i32.const 1024) (i32.const 1088) (i32.const 1) (i32.const 1120)))
    (global.set $next (i32.const 40000))
    (i64.const 8796093022251)))
