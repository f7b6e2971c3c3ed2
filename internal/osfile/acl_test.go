package osfile

import (
	"slices"
	"testing"
)

const (
	sidMe    = "S-1-5-21-1000-2000-3000-1001"
	sidOther = "S-1-5-21-1000-2000-3000-1002"
)

// Rights as icacls writes them.
const (
	fullControl = 0x001F01FF
	modify      = 0x001301BF
	readExecute = 0x001200A9
)

// TestOwnerIsUser: the owner must be the user; the Administrators group
// counts only for an elevated administrator; SYSTEM or another user do
// not.
func TestOwnerIsUser(t *testing.T) {
	for _, c := range []struct {
		owner    string
		elevated bool
		want     bool
	}{
		{sidMe, false, true},
		{sidOther, false, false},
		{sidOther, true, false},
		{sidSystem, true, false},
		{sidAdministrators, false, false},
		{sidAdministrators, true, true},
	} {
		if got := ownerIsUser(c.owner, sidMe, c.elevated); got != c.want {
			t.Errorf("ownerIsUser(%s, elevated %v) = %v, want %v", c.owner, c.elevated, got, c.want)
		}
	}
}

// TestUntrustedWriters judges DACLs as icacls shows them on real systems.
func TestUntrustedWriters(t *testing.T) {
	inherit := uint8(aceObjectInherit | aceContainerInherit)
	allow := func(sid string, mask uint32, flags uint8) ace {
		return ace{kind: aceAllow, sid: sid, mask: mask, flags: flags}
	}
	deny := func(sid string, mask uint32, flags uint8) ace {
		return ace{kind: aceDeny, sid: sid, mask: mask, flags: flags}
	}
	// %LOCALAPPDATA%'s usual DACL: SYSTEM, Administrators and the user.
	private := []ace{
		allow(sidSystem, fullControl, inherit|aceInherited),
		allow(sidAdministrators, fullControl, inherit|aceInherited),
		allow(sidMe, fullControl, inherit|aceInherited),
	}
	for _, c := range []struct {
		name string
		sec  securityInfo
		dir  bool
		want []string
	}{
		{"owner only", securityInfo{owner: sidMe, dacl: []ace{allow(sidMe, fullControl, inherit)}}, true, nil},
		{"SYSTEM and Administrators", securityInfo{owner: sidMe, dacl: private}, true, nil},
		{"OWNER RIGHTS and CREATOR OWNER", securityInfo{owner: sidMe, dacl: []ace{
			allow(sidOwnerRights, fullControl, 0),
			allow(sidCreatorOwner, fullControl, inherit|aceInheritOnly),
		}}, true, nil},
		{"empty DACL: nobody", securityInfo{owner: sidMe}, true, nil},
		{"NULL DACL: everyone", securityInfo{owner: sidMe, nullDACL: true}, true, []string{sidEveryone}},
		{"Everyone full control", securityInfo{owner: sidMe, dacl: append(slices.Clone(private), allow(sidEveryone, fullControl, inherit))}, true, []string{sidEveryone}},
		{"Users modify (C:\\ root's inherited entry)", securityInfo{owner: sidMe, dacl: append(slices.Clone(private), allow(sidUsers, modify, inherit|aceInherited))}, true, []string{sidUsers}},
		{"Authenticated Users generic write", securityInfo{owner: sidMe, dacl: append(slices.Clone(private), allow(sidAuthenticatedUsers, genericWrite, 0))}, false, []string{sidAuthenticatedUsers}},
		{"another user may change the DACL", securityInfo{owner: sidMe, dacl: []ace{allow(sidOther, rightWriteDAC|readExecute, 0)}}, false, []string{sidOther}},
		{"Users read and execute only", securityInfo{owner: sidMe, dacl: append(slices.Clone(private), allow(sidUsers, readExecute, inherit))}, true, nil},
		{"Users write denied first", securityInfo{owner: sidMe, dacl: append([]ace{deny(sidUsers, modify, inherit)}, append(slices.Clone(private), allow(sidUsers, modify, inherit|aceInherited))...)}, true, nil},
		{"Everyone's deny covers Users", securityInfo{owner: sidMe, dacl: []ace{deny(sidEveryone, genericWrite|fileDeleteChild|rightDelete|rightWriteDAC|rightWriteOwner, 0), allow(sidUsers, fullControl, 0)}}, false, nil},
		{"a deny for Users does not cover Authenticated Users", securityInfo{owner: sidMe, dacl: []ace{deny(sidUsers, fullControl, 0), allow(sidAuthenticatedUsers, modify, 0)}}, false, []string{sidAuthenticatedUsers}},
		{"inherited deny after an explicit allow takes nothing back", securityInfo{owner: sidMe, dacl: []ace{
			allow(sidUsers, modify, 0),
			deny(sidUsers, fullControl, inherit|aceInherited),
		}}, false, []string{sidUsers}},
		{"inherit-only deny does not protect the directory itself", securityInfo{owner: sidMe, dacl: []ace{
			deny(sidUsers, fullControl, inherit|aceInheritOnly),
			allow(sidUsers, modify, 0),
		}}, true, []string{sidUsers}},
		{"a deny that leaves a write right", securityInfo{owner: sidMe, dacl: []ace{
			deny(sidUsers, fileWriteData, 0),
			allow(sidUsers, modify, 0),
		}}, false, []string{sidUsers}},
		{"inherit-only allow reaches what is created in a directory", securityInfo{owner: sidMe, dacl: append(slices.Clone(private), allow(sidUsers, modify, aceObjectInherit|aceInheritOnly))}, true, []string{sidUsers}},
		{"inherit-only allow on a file applies to nothing", securityInfo{owner: sidMe, dacl: []ace{allow(sidUsers, modify, aceObjectInherit|aceInheritOnly)}}, false, nil},
		{"audit entries grant nothing", securityInfo{owner: sidMe, dacl: []ace{{kind: aceOther, sid: sidEveryone, mask: fullControl}}}, true, nil},
		{"each writer once", securityInfo{owner: sidMe, dacl: []ace{allow(sidUsers, modify, inherit), allow(sidEveryone, genericAll, 0), allow(sidUsers, fullControl, 0)}}, true, []string{sidUsers, sidEveryone}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := untrustedWriters(c.sec, sidMe, c.dir); !slices.Equal(got, c.want) {
				t.Fatalf("untrustedWriters = %v, want %v", got, c.want)
			}
		})
	}
}

// TestWritableErrorTexts pins the texts callers build their messages of.
func TestWritableErrorTexts(t *testing.T) {
	unix := &WritableError{Path: "/c", Mode: 0o777}
	if got, want := unix.Error(), "/c is writable by others (mode 0777)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := unix.Fix(), "chmod go-w /c"; got != want {
		t.Errorf("Fix() = %q, want %q", got, want)
	}
	win := &WritableError{Path: `C:\c`, Writers: []Principal{{UID: -1, SID: sidUsers, Name: `BUILTIN\Users`}, {UID: -1, SID: sidOther}}}
	if got, want := win.Error(), `C:\c is writable by others (BUILTIN\Users (S-1-5-32-545), S-1-5-21-1000-2000-3000-1002 may write to it)`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := win.Fix(), `icacls "C:\c" /inheritance:r /grant:r "%USERNAME%":(OI)(CI)F`; got != want {
		t.Errorf("Fix() = %q, want %q", got, want)
	}
	no := &NotOwnedError{Path: "/c", Owner: Principal{UID: 4242}, User: Principal{UID: 1000}}
	if got, want := no.Error(), "/c belongs to uid 4242, not to this user (uid 1000)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
