package lsp

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// sysProcAttr starts a server suspended: adopt puts it in its job object
// before it runs, so nothing it spawns can start outside the job.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_SUSPENDED}
}

// procGroup is a started server and every process it spawns: a job object
// with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE. Only warden holds a handle to it
// (it is not inheritable), so when warden exits for any reason, killed and
// crashed included, Windows closes the handle and ends every process in
// the job: what Pdeathsig and the process group do on Linux.
type procGroup struct {
	// process is a handle to the server (SYNCHRONIZE), for awaitExit.
	process windows.Handle

	mu  sync.Mutex
	job windows.Handle // 0 once awaitExit has closed it
}

// adopt puts the server cmd has just started (suspended) in a new job
// object and resumes it. On error the server is killed; the caller still
// waits for it.
func adopt(cmd *exec.Cmd) (*procGroup, error) {
	g, err := newJob(uint32(cmd.Process.Pid))
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("job object: %w", err)
	}
	return g, nil
}

func newJob(pid uint32) (g *procGroup, err error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	defer func() {
		if err != nil {
			windows.CloseHandle(job)
		}
	}()
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		return nil, fmt.Errorf("set kill on close: %w", err)
	}
	// The pid is the server's while os/exec holds its process handle.
	proc, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|windows.SYNCHRONIZE, false, pid)
	if err != nil {
		return nil, fmt.Errorf("open process %d: %w", pid, err)
	}
	if err := windows.AssignProcessToJobObject(job, proc); err != nil {
		windows.CloseHandle(proc)
		return nil, fmt.Errorf("assign process %d: %w", pid, err)
	}
	if err := resume(pid); err != nil {
		windows.CloseHandle(proc)
		return nil, fmt.Errorf("resume process %d: %w", pid, err)
	}
	return &procGroup{process: proc, job: job}, nil
}

// resume resumes the threads of the suspended process pid: its main thread,
// the only one a process started suspended has. os/exec does not return
// the thread handle CreateProcess gave it, so the thread is found through
// a snapshot of the system's threads.
func resume(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(snap)
	entry := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &entry); err == nil; err = windows.Thread32Next(snap, &entry) {
		if entry.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, entry.ThreadID)
		if err != nil {
			return fmt.Errorf("open thread %d: %w", entry.ThreadID, err)
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return fmt.Errorf("thread %d: %w", entry.ThreadID, err)
		}
		resumed++
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return err
	}
	if resumed == 0 {
		return errors.New("no thread found")
	}
	return nil
}

// kill ends every process in the job.
func (g *procGroup) kill() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.job == 0 {
		return nil
	}
	return windows.TerminateJobObject(g.job, 1)
}

// awaitExit waits for the server to exit, ends what is left in its job, and
// reaps the server; then it closes the job, which is empty by then.
func awaitExit(cmd *exec.Cmd, g *procGroup) error {
	_, _ = windows.WaitForSingleObject(g.process, windows.INFINITE)
	_ = g.kill()
	err := cmd.Wait()
	g.mu.Lock()
	windows.CloseHandle(g.job)
	g.job = 0
	g.mu.Unlock()
	windows.CloseHandle(g.process)
	return err
}

// diesWithWarden: KILL_ON_JOB_CLOSE ends the job with warden's last handle.
const diesWithWarden = true
