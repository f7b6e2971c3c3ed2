;; Spins in _initialize until the server stops: it stays loading while the rest serves.
(module
  
  (memory (export "memory") 1)
  (global $next (mut i32) (i32.const 40000))
  (global $i (mut i32) (i32.const 0))
  (func (export "warden_alloc") (param $size i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $next))
    (global.set $next (i32.add (global.get $next) (local.get $size)))
    (local.get $ptr))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (data (i32.const 16) "{\22tools\22:[{\22name\22:\22slowinit\22,\22description\22:\22Spins in _initialize until the server stops: it stays loading while the rest serves.\22,\22inputSchema\22:{\22type\22:\22object\22}}]}")
  (data (i32.const 1024) "{\22content\22:[{\22type\22:\22text\22,\22text\22:\22done\22}]}")
  (func (export "warden_describe") (result i64) (i64.const 68719476900))
  (func (export "_initialize") (loop $spin (br $spin)))
  (func (export "warden_call") (param i64) (result i64)
    
    (global.set $next (i32.const 40000))
    (i64.const 4398046511147)))
