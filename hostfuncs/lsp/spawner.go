package lsp

import (
	"errors"
	"os/exec"
	"runtime"
	"sync"
)

// spawner starts processes from one goroutine locked to its OS thread.
//
// Pdeathsig fires when the thread that forked the child exits, not when the
// process does. Go ends a thread only when a goroutine locked to it exits,
// and an unlocked goroutine may run on a thread that some other goroutine
// later locks and abandons, killing our servers with it. A thread of our
// own, locked for the manager's lifetime, dies only with warden or when the
// manager closes, after every server is gone.
type spawner struct {
	reqs   chan spawnRequest
	closed chan struct{}
	once   sync.Once
}

type spawnRequest struct {
	cmd    *exec.Cmd
	result chan error
}

var errSpawnerClosed = errors.New("lsp: manager is closed")

func newSpawner() *spawner {
	sp := &spawner{reqs: make(chan spawnRequest), closed: make(chan struct{})}
	go sp.run()
	return sp
}

func (sp *spawner) run() {
	// Never unlocked: when run returns the thread exits, and the kernel
	// kills any child still tied to it.
	runtime.LockOSThread()
	for {
		select {
		case r := <-sp.reqs:
			r.result <- r.cmd.Start()
		case <-sp.closed:
			return
		}
	}
}

// start runs cmd.Start on the spawner's thread.
func (sp *spawner) start(cmd *exec.Cmd) error {
	r := spawnRequest{cmd: cmd, result: make(chan error, 1)}
	select {
	case sp.reqs <- r:
		return <-r.result
	case <-sp.closed:
		return errSpawnerClosed
	}
}

func (sp *spawner) close() { sp.once.Do(func() { close(sp.closed) }) }
