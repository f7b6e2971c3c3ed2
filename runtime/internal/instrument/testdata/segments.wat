;; Data segments as Go's linker writes them, one per symbol, touching,
;; overlapping and a few bytes apart: the pass merges them (data.go).
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "\01\02\03\04")
  (data (i32.const 20) "\05\06")
  (data (i32.const 18) "\ff")
  (data (i32.const 40) "forty")
  (data (i32.const 4096) "a page away")
  (func (export "load") (param i32) (result i32)
    (i32.load8_u (local.get 0))))
