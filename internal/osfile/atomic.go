package osfile

import (
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
)

// Step names a point inside an atomic write (WriteAtomic), reported to the
// write's Reached hook as it completes. A crash test kills the writer at
// an exact step, so that every step is covered on every run however busy
// the machine.
type Step string

// The steps of an atomic write, in order. WriteAtomic reports the first
// four; StepDirSynced is the caller's to report, once it has synced the
// directory (or directories) the rename changed: a store that writes a
// batch syncs the directory once after the last rename, and one that made
// directories on the way syncs their parents too.
const (
	StepTempCreated Step = "temp-created" // the temp file exists, empty
	StepHalfWritten Step = "half-written" // half the data is in the temp file
	StepSynced      Step = "synced"       // all the data is in the temp file, synced
	StepRenamed     Step = "renamed"      // the temp file replaced the file
	StepDirSynced   Step = "dir-synced"   // the directory holding it is synced
)

// WriteSteps lists every step of an atomic write, in order.
func WriteSteps() []Step {
	return []Step{StepTempCreated, StepHalfWritten, StepSynced, StepRenamed, StepDirSynced}
}

// Write is how WriteAtomic writes.
type Write struct {
	// Perm is the mode of the file made (before the umask).
	Perm fs.FileMode
	// TempPrefix starts the temp file's name (a random suffix follows).
	// The caller picks one no file of its own starts with, and removes
	// the files starting with it that it finds under its lock: they were
	// left by a writer that died.
	TempPrefix string
	// Reached, when set, is told each step as it completes. Only crash
	// tests set it.
	Reached func(Step)
}

func (w Write) reach(step Step) {
	if w.Reached != nil {
		w.Reached(step)
	}
}

// WriteAtomic replaces name in dir with data so that, whatever instant the
// process dies at, name holds either its old content or data, never a mix
// or nothing: data goes to a new temp file in the same directory (O_EXCL,
// which never follows a link), is synced, and is renamed over name (a
// rename replaces a link, never follows it). The caller then syncs the
// directory (SyncDir) for the rename itself to survive a power loss, and
// holds a lock that keeps other writers of name out.
//
// On an error the temp file is removed; the error is the system's, with
// the path relative to dir that os.Root gives it.
func WriteAtomic(dir *os.Root, name string, data []byte, w Write) error {
	var suffix [8]byte
	rand.Read(suffix[:])
	tmp := w.TempPrefix + hex.EncodeToString(suffix[:])
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, w.Perm)
	if err != nil {
		return err
	}
	w.reach(StepTempCreated)
	half := len(data) / 2
	_, err = f.Write(data[:half])
	if err == nil {
		w.reach(StepHalfWritten)
		_, err = f.Write(data[half:])
	}
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		w.reach(StepSynced)
		err = dir.Rename(tmp, name)
	}
	if err != nil {
		dir.Remove(tmp)
		return err
	}
	w.reach(StepRenamed)
	return nil
}
