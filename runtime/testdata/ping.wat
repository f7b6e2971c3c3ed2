;; ping: the smallest complete warden tool, written by hand against docs/abi.md.
;; It answers every call with the text "pong".
(module
  ;; The host reads and writes only this memory.
  (memory (export "memory") 1)

  ;; An allocator that hands out the same region every time: ping
  ;; allocates nothing itself and imports no host function, so the host
  ;; calls warden_alloc only to place a request, and by then it has copied
  ;; the previous response (docs/abi.md, "Who owns memory"): nothing before
  ;; is still needed. Under isolation "session" one instance serves many
  ;; calls; a pointer that only ever grew would run out of memory after a
  ;; few hundred of them. 0 tells the host a request does not fit.
  (global $heap i32 (i32.const 1024))
  (func (export "warden_alloc") (param $size i32) (result i32)
    (if (i64.gt_u (i64.add (i64.extend_i32_u (global.get $heap)) (i64.extend_i32_u (local.get $size)))
                  (i64.shl (i64.extend_i32_u (memory.size)) (i64.const 16)))
      (then (return (i32.const 0))))
    (global.get $heap))

  (func (export "warden_abi_version") (result i32) (i32.const 1))

  ;; Static JSON lives in data segments; (ptr << 32) | len packs a range.
  (data (i32.const 16) "{\"tools\":[{\"name\":\"ping\",\"description\":\"Answers pong.\",\"inputSchema\":{\"type\":\"object\"}}]}")
  (data (i32.const 512) "{\"content\":[{\"type\":\"text\",\"text\":\"pong\"}]}")

  (func (export "warden_describe") (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const 89)))

  ;; The request (a JSON object naming the tool and its arguments) is ignored.
  (func (export "warden_call") (param $request i64) (result i64)
    (i64.or (i64.shl (i64.const 512) (i64.const 32)) (i64.const 43))))
