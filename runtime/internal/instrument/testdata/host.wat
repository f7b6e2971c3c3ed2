;; Calls a host function in a loop; the host charges fuel in Go.
(module
  (import "env" "work" (func $work (param i32)))
  (func (export "run_host") (param $n i32) (local $i i32)
    (loop $l
      (call $work (local.get $i))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n)))))
)
