// Package csdktest holds the tests of warden's C guest SDK (guest-sdk/c:
// warden.h, warden.c and the examples): they build each example with clang
// and run it through warden in-process. There is no Go API here. (The tests
// cannot live in guest-sdk/c itself: the go command refuses a package
// directory holding .c files without cgo.)
package csdktest
