;; __NAME__: a warden tool written by hand in WebAssembly text, against
;; warden's docs/abi.md. It counts the words in a text: runs of bytes that
;; are not ASCII white space.
(module
  ;; The host reads and writes only this memory.
  (memory (export "memory") 1)

  ;; Static strings, NUL-terminated (the tool's name, and so the
  ;; descriptor's length, is only known once warden new filled it in).
  (data (i32.const 16) "arguments\00")
  (data (i32.const 32) "text\00")
  (data (i32.const 64) "{\"error\":{\"kind\":\"invalid_arguments\",\"message\":\"text is required and must be a string\"}}\00")
  (data (i32.const 256) "{\"content\":[{\"type\":\"text\",\"text\":\"\00")
  (data (i32.const 320) " words\"}],\"structuredContent\":{\"words\":\00")
  (data (i32.const 384) "}}\00")
  (data (i32.const 1024) "{\"tools\":[{\"name\":\"__NAME__\",\"description\":\"Counts the words in a text.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]},\"outputSchema\":{\"type\":\"object\",\"properties\":{\"words\":{\"type\":\"integer\"}},\"required\":[\"words\"]},\"annotations\":{\"readOnlyHint\":true}}]}\00")

  ;; The heap: a bump allocator that starts over when a new call begins.
  ;; Under isolation "session" one instance serves many calls, so memory
  ;; must be reused. The host calls warden_alloc outside warden_call only to
  ;; place the next request, and it has copied the previous response by
  ;; then (docs/abi.md, "Who owns memory"): everything allocated before is
  ;; garbage. Inside warden_call ($in_call) the host allocates capability
  ;; replies the call still needs, so nothing is reset there.
  (global $heap_base i32 (i32.const 4096))
  (global $next (mut i32) (i32.const 4096))
  (global $in_call (mut i32) (i32.const 0))

  (func $warden_alloc (export "warden_alloc") (param $size i32) (result i32)
    (local $ptr i32) (local $end i64) (local $have i64)
    (if (i32.eqz (global.get $in_call))
      (then (global.set $next (global.get $heap_base))))
    (local.set $ptr (i32.and (i32.add (global.get $next) (i32.const 7)) (i32.const -8)))
    (local.set $end (i64.add (i64.extend_i32_u (local.get $ptr)) (i64.extend_i32_u (local.get $size))))
    (local.set $have (i64.shl (i64.extend_i32_u (memory.size)) (i64.const 16)))
    (if (i64.gt_u (local.get $end) (local.get $have))
      (then
        ;; Grow by the pages missing; 0 tells the host there is no room.
        (if (i32.eq
              (memory.grow (i32.wrap_i64 (i64.shr_u
                (i64.add (i64.sub (local.get $end) (local.get $have)) (i64.const 65535))
                (i64.const 16))))
              (i32.const -1))
          (then (return (i32.const 0))))))
    (global.set $next (i32.wrap_i64 (local.get $end)))
    (local.get $ptr))

  (func (export "warden_abi_version") (result i32) (i32.const 1))

  (func $strlen (param $s i32) (result i32)
    (local $n i32)
    (block $done
      (loop $next
        (br_if $done (i32.eqz (i32.load8_u (i32.add (local.get $s) (local.get $n)))))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br $next)))
    (local.get $n))

  (func $pack (param $ptr i32) (param $len i32) (result i64)
    (i64.or (i64.shl (i64.extend_i32_u (local.get $ptr)) (i64.const 32))
            (i64.extend_i32_u (local.get $len))))

  (func (export "warden_describe") (result i64)
    (call $pack (i32.const 1024) (call $strlen (i32.const 1024))))

  ;; The request JSON is scanned in place: $p is the position, $end its end.
  (global $p (mut i32) (i32.const 0))
  (global $end (mut i32) (i32.const 0))

  ;; The byte at $p, or 0 at the end.
  (func $peek (result i32)
    (if (result i32) (i32.lt_u (global.get $p) (global.get $end))
      (then (i32.load8_u (global.get $p)))
      (else (i32.const 0))))

  (func $advance (global.set $p (i32.add (global.get $p) (i32.const 1))))

  (func $is_space (param $c i32) (result i32)
    (i32.or (i32.eq (local.get $c) (i32.const 32))
            (i32.and (i32.ge_u (local.get $c) (i32.const 9)) (i32.le_u (local.get $c) (i32.const 13)))))

  (func $skip_ws
    (block $done
      (loop $next
        (br_if $done (i32.eqz (call $is_space (call $peek))))
        (br_if $done (i32.eqz (call $peek)))
        (call $advance)
        (br $next))))

  ;; At a '"': moves past the closing quote. 0 if the string never ends.
  (func $skip_string (result i32)
    (local $c i32)
    (call $advance)
    (loop $next
      (local.set $c (call $peek))
      (if (i32.eqz (local.get $c)) (then (return (i32.const 0))))
      (call $advance)
      (if (i32.eq (local.get $c) (i32.const 92)) ;; backslash: skip the escaped byte
        (then (call $advance) (br $next)))
      (br_if $next (i32.ne (local.get $c) (i32.const 34))))
    (i32.const 1))

  ;; Moves past one JSON value of any kind. 0 on malformed input.
  (func $skip_value (result i32)
    (local $c i32) (local $depth i32)
    (local.set $c (call $peek))
    (if (i32.eq (local.get $c) (i32.const 34)) (then (return (call $skip_string))))
    (if (i32.or (i32.eq (local.get $c) (i32.const 123)) (i32.eq (local.get $c) (i32.const 91)))
      (then
        (loop $next
          (local.set $c (call $peek))
          (if (i32.eqz (local.get $c)) (then (return (i32.const 0))))
          (if (i32.eq (local.get $c) (i32.const 34))
            (then (if (i32.eqz (call $skip_string)) (then (return (i32.const 0)))) (br $next)))
          (if (i32.or (i32.eq (local.get $c) (i32.const 123)) (i32.eq (local.get $c) (i32.const 91)))
            (then (local.set $depth (i32.add (local.get $depth) (i32.const 1)))))
          (if (i32.or (i32.eq (local.get $c) (i32.const 125)) (i32.eq (local.get $c) (i32.const 93)))
            (then (local.set $depth (i32.sub (local.get $depth) (i32.const 1)))))
          (call $advance)
          (br_if $next (local.get $depth)))
        (return (i32.const 1))))
    ;; A number, true, false or null: up to the next delimiter.
    (block $done
      (loop $next
        (local.set $c (call $peek))
        (br_if $done (i32.eqz (local.get $c)))
        (br_if $done (call $is_space (local.get $c)))
        (br_if $done (i32.eq (local.get $c) (i32.const 44)))
        (br_if $done (i32.eq (local.get $c) (i32.const 125)))
        (br_if $done (i32.eq (local.get $c) (i32.const 93)))
        (call $advance)
        (br $next)))
    (i32.const 1))

  ;; At a '"': whether the string there is exactly the NUL-terminated $key.
  (func $key_is (param $key i32) (result i32)
    (local $i i32) (local $k i32) (local $at i32)
    (loop $next
      (local.set $k (i32.load8_u (i32.add (local.get $key) (local.get $i))))
      (local.set $at (i32.add (i32.add (global.get $p) (i32.const 1)) (local.get $i)))
      (if (i32.ge_u (local.get $at) (global.get $end)) (then (return (i32.const 0))))
      (if (i32.eqz (local.get $k))
        (then (return (i32.eq (i32.load8_u (local.get $at)) (i32.const 34)))))
      (if (i32.ne (i32.load8_u (local.get $at)) (local.get $k)) (then (return (i32.const 0))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next))
    (i32.const 0))

  ;; At a '{': moves to the value of member $key and returns 1, or 0 when
  ;; the object has no such member (or is malformed).
  (func $find_member (param $key i32) (result i32)
    (local $match i32)
    (if (i32.ne (call $peek) (i32.const 123)) (then (return (i32.const 0))))
    (call $advance)
    (loop $next
      (call $skip_ws)
      (if (i32.ne (call $peek) (i32.const 34)) (then (return (i32.const 0))))
      (local.set $match (call $key_is (local.get $key)))
      (if (i32.eqz (call $skip_string)) (then (return (i32.const 0))))
      (call $skip_ws)
      (if (i32.ne (call $peek) (i32.const 58)) (then (return (i32.const 0))))
      (call $advance)
      (call $skip_ws)
      (if (local.get $match) (then (return (i32.const 1))))
      (if (i32.eqz (call $skip_value)) (then (return (i32.const 0))))
      (call $skip_ws)
      (if (i32.eq (call $peek) (i32.const 44)) (then (call $advance) (br $next))))
    (i32.const 0))

  (func $hex (param $c i32) (result i32)
    (if (i32.le_u (i32.sub (local.get $c) (i32.const 48)) (i32.const 9))
      (then (return (i32.sub (local.get $c) (i32.const 48)))))
    (i32.and (i32.add (i32.sub (i32.or (local.get $c) (i32.const 32)) (i32.const 97)) (i32.const 10)) (i32.const 15)))

  ;; At a '"': counts the words of the string, decoding escapes (\n and
  ;; \u0020 are white space too). -1 if the string never ends.
  (func $count_words (result i32)
    (local $c i32) (local $space i32) (local $in_word i32) (local $words i32) (local $u i32)
    (call $advance)
    (loop $next
      (local.set $c (call $peek))
      (if (i32.eqz (local.get $c)) (then (return (i32.const -1))))
      (call $advance)
      (if (i32.eq (local.get $c) (i32.const 34)) (then (return (local.get $words))))
      (local.set $space (call $is_space (local.get $c)))
      (if (i32.eq (local.get $c) (i32.const 92))
        (then
          (local.set $c (call $peek))
          (call $advance)
          ;; \n \t \r \f stand for white space; \uXXXX when it is one.
          (local.set $space
            (i32.or (i32.or (i32.eq (local.get $c) (i32.const 110)) (i32.eq (local.get $c) (i32.const 116)))
                    (i32.or (i32.eq (local.get $c) (i32.const 114)) (i32.eq (local.get $c) (i32.const 102)))))
          (if (i32.eq (local.get $c) (i32.const 117))
            (then
              (if (i32.gt_u (i32.add (global.get $p) (i32.const 4)) (global.get $end)) (then (return (i32.const -1))))
              (local.set $u (i32.or (i32.or
                (i32.shl (call $hex (i32.load8_u (global.get $p))) (i32.const 12))
                (i32.shl (call $hex (i32.load8_u offset=1 (global.get $p))) (i32.const 8)))
                (i32.or
                (i32.shl (call $hex (i32.load8_u offset=2 (global.get $p))) (i32.const 4))
                (call $hex (i32.load8_u offset=3 (global.get $p))))))
              (global.set $p (i32.add (global.get $p) (i32.const 4)))
              (local.set $space (call $is_space (local.get $u)))))))
      (if (local.get $space)
        (then (local.set $in_word (i32.const 0)))
        (else
          (if (i32.eqz (local.get $in_word))
            (then
              (local.set $words (i32.add (local.get $words) (i32.const 1)))
              (local.set $in_word (i32.const 1))))))
      (br $next))
    (i32.const -1))

  ;; The response is written at $out.
  (global $out (mut i32) (i32.const 0))

  (func $put (param $s i32)
    (local $c i32)
    (loop $next
      (local.set $c (i32.load8_u (local.get $s)))
      (if (local.get $c)
        (then
          (i32.store8 (global.get $out) (local.get $c))
          (global.set $out (i32.add (global.get $out) (i32.const 1)))
          (local.set $s (i32.add (local.get $s) (i32.const 1)))
          (br $next)))))

  ;; Writes $n in decimal.
  (func $put_u32 (param $n i32)
    (local $digits i32) (local $m i32)
    ;; Count the digits, then write them from the last.
    (local.set $m (local.get $n))
    (loop $count
      (local.set $digits (i32.add (local.get $digits) (i32.const 1)))
      (local.set $m (i32.div_u (local.get $m) (i32.const 10)))
      (br_if $count (local.get $m)))
    (global.set $out (i32.add (global.get $out) (local.get $digits)))
    (local.set $m (global.get $out))
    (loop $write
      (local.set $m (i32.sub (local.get $m) (i32.const 1)))
      (i32.store8 (local.get $m) (i32.add (i32.const 48) (i32.rem_u (local.get $n) (i32.const 10))))
      (local.set $n (i32.div_u (local.get $n) (i32.const 10)))
      (br_if $write (local.get $n))))

  (func (export "warden_call") (param $request i64) (result i64)
    (local $words i32) (local $start i32)
    (global.set $in_call (i32.const 1))
    (global.set $p (i32.wrap_i64 (i64.shr_u (local.get $request) (i64.const 32))))
    (global.set $end (i32.add (global.get $p) (i32.wrap_i64 (local.get $request))))
    (call $skip_ws)
    (local.set $words (i32.const -1))
    (if (call $find_member (i32.const 16))
      (then
        (if (call $find_member (i32.const 32))
          (then
            (if (i32.eq (call $peek) (i32.const 34))
              (then (local.set $words (call $count_words))))))))
    (if (i32.lt_s (local.get $words) (i32.const 0))
      (then
        (global.set $in_call (i32.const 0))
        (return (call $pack (i32.const 64) (call $strlen (i32.const 64))))))
    ;; {"content":[{"type":"text","text":"N words"}],"structuredContent":{"words":N}}
    (local.set $start (call $warden_alloc (i32.const 128)))
    (if (i32.eqz (local.get $start)) (then (unreachable)))
    (global.set $out (local.get $start))
    (call $put (i32.const 256))
    (call $put_u32 (local.get $words))
    (call $put (i32.const 320))
    (call $put_u32 (local.get $words))
    (call $put (i32.const 384))
    (global.set $in_call (i32.const 0))
    (call $pack (local.get $start) (i32.sub (global.get $out) (local.get $start))))
)
