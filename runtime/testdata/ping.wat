;; ping: the smallest complete warden tool, written by hand against docs/abi.md.
;; It answers every call with the text "pong".
(module
  ;; The host reads and writes only this memory.
  (memory (export "memory") 1)

  ;; A bump allocator: good enough for a module that handles one call at a
  ;; time and never frees. Under isolation "call" the host resets the module
  ;; after every call anyway.
  (global $next (mut i32) (i32.const 1024))
  (func (export "warden_alloc") (param $size i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $next))
    (global.set $next (i32.add (global.get $next) (local.get $size)))
    (local.get $ptr))

  (func (export "warden_abi_version") (result i32) (i32.const 1))

  ;; Static JSON lives in data segments; (ptr << 32) | len packs a range.
  (data (i32.const 16) "{\"tools\":[{\"name\":\"ping\",\"description\":\"Answers pong.\",\"inputSchema\":{\"type\":\"object\"}}]}")
  (data (i32.const 512) "{\"content\":[{\"type\":\"text\",\"text\":\"pong\"}]}")

  (func (export "warden_describe") (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const 89)))

  ;; The request (a JSON object naming the tool and its arguments) is ignored.
  (func (export "warden_call") (param $request i64) (result i64)
    (i64.or (i64.shl (i64.const 512) (i64.const 32)) (i64.const 43))))
