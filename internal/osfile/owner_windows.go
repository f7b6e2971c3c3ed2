//go:build windows

package osfile

import (
	"errors"
	"fmt"
	"io/fs"
	"unsafe"

	"golang.org/x/sys/windows"
)

// ownerOf reads the owner of path; of the link itself when info is a
// link's (Lstat), of its target otherwise.
func ownerOf(path string, info fs.FileInfo) (owner, user Principal, mine bool, err error) {
	sd, err := securityOf(path, info.Mode()&fs.ModeSymlink == 0, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return owner, user, false, err
	}
	sid, _, err := sd.Owner()
	if err != nil {
		return owner, user, false, fmt.Errorf("owner of %s: %w", path, err)
	}
	me, elevated, err := currentUser()
	if err != nil {
		return owner, user, false, err
	}
	mine = ownerIsUser(sid.String(), me.String(), elevated)
	// Account names only for a refusal: looking a domain account up may
	// ask a domain controller, and may wait for one.
	return principal(sid, !mine), principal(me, !mine), mine, nil
}

func checkPrivate(path string, info fs.FileInfo) error {
	sd, err := securityOf(path, true, windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return err
	}
	ownerSID, _, err := sd.Owner()
	if err != nil {
		return fmt.Errorf("owner of %s: %w", path, err)
	}
	me, elevated, err := currentUser()
	if err != nil {
		return err
	}
	if !ownerIsUser(ownerSID.String(), me.String(), elevated) {
		return &NotOwnedError{Path: path, Owner: principal(ownerSID, true), User: principal(me, true)}
	}
	sec := securityInfo{owner: ownerSID.String()}
	dacl, _, err := sd.DACL()
	switch {
	case errors.Is(err, windows.ERROR_OBJECT_NOT_FOUND) || (err == nil && dacl == nil):
		sec.nullDACL = true
	case err != nil:
		return fmt.Errorf("access list of %s: %w", path, err)
	default:
		if sec.dacl, err = aces(dacl); err != nil {
			return fmt.Errorf("access list of %s: %w", path, err)
		}
	}
	sids := untrustedWriters(sec, me.String(), info.IsDir())
	if len(sids) == 0 {
		return nil
	}
	we := &WritableError{Path: path}
	for _, s := range sids {
		p := Principal{UID: -1, SID: s}
		if sid, err := windows.StringToSid(s); err == nil {
			p = principal(sid, true)
		}
		we.Writers = append(we.Writers, p)
	}
	return we
}

// securityOf reads path's security descriptor through a handle opened for
// READ_CONTROL only, following a final link or not.
func securityOf(path string, follow bool, what windows.SECURITY_INFORMATION) (*windows.SECURITY_DESCRIPTOR, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	flags := uint32(windows.FILE_FLAG_BACKUP_SEMANTICS) // directories too
	if !follow {
		flags |= windows.FILE_FLAG_OPEN_REPARSE_POINT
	}
	h, err := windows.CreateFile(p, windows.READ_CONTROL,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil, windows.OPEN_EXISTING, flags, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer windows.CloseHandle(h)
	sd, err := windows.GetSecurityInfo(h, windows.SE_FILE_OBJECT, what)
	if err != nil {
		return nil, fmt.Errorf("security descriptor of %s: %w", path, err)
	}
	return sd, nil
}

// currentUser is the SID of this process's user, and whether the process
// runs elevated as an administrator (its token has the Administrators
// group enabled, which an unelevated administrator's has for deny only).
func currentUser() (*windows.SID, bool, error) {
	tu, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil, false, fmt.Errorf("current user: %w", err)
	}
	admins, err := windows.CreateWellKnownSid(windows.WinBuiltinAdministratorsSid)
	if err != nil {
		return nil, false, fmt.Errorf("administrators SID: %w", err)
	}
	elevated, err := windows.Token(0).IsMember(admins)
	if err != nil {
		elevated = false // not known: the owner must then be the user
	}
	return tu.User.Sid, elevated, nil
}

// principal is sid as a Principal, with its account name when named.
func principal(sid *windows.SID, named bool) Principal {
	p := Principal{UID: -1, SID: sid.String()}
	if !named {
		return p
	}
	if account, domain, _, err := sid.LookupAccount(""); err == nil {
		p.Name = account
		if domain != "" {
			p.Name = domain + `\` + account
		}
	}
	return p
}

// ACE types (winnt.h) beyond the two x/sys names.
const (
	accessAllowedObjectACEType         = 0x5
	accessAllowedCallbackACEType       = 0x9
	accessAllowedCallbackObjectACEType = 0xB
	// object ACEs carry flags saying which GUIDs precede the SID.
	aceObjectTypePresent          = 0x1
	aceInheritedObjectTypePresent = 0x2
)

// aces lists a DACL's entries for the decisions in acl.go.
func aces(acl *windows.ACL) ([]ace, error) {
	out := make([]ace, 0, acl.AceCount)
	for i := uint32(0); i < uint32(acl.AceCount); i++ {
		var e *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(acl, i, &e); err != nil {
			return nil, err
		}
		a := ace{flags: e.Header.AceFlags, mask: uint32(e.Mask)}
		sidAt := unsafe.Pointer(&e.SidStart)
		switch e.Header.AceType {
		case windows.ACCESS_ALLOWED_ACE_TYPE, accessAllowedCallbackACEType:
			a.kind = aceAllow
		case windows.ACCESS_DENIED_ACE_TYPE:
			a.kind = aceDeny
		case accessAllowedObjectACEType, accessAllowedCallbackObjectACEType:
			// Mask, Flags, [ObjectType], [InheritedObjectType], SID.
			a.kind = aceAllow
			objFlags := *(*uint32)(sidAt)
			off := uintptr(4)
			if objFlags&aceObjectTypePresent != 0 {
				off += 16
			}
			if objFlags&aceInheritedObjectTypePresent != 0 {
				off += 16
			}
			sidAt = unsafe.Add(sidAt, off)
		default:
			a.kind = aceOther
		}
		if a.kind != aceOther {
			a.sid = (*windows.SID)(sidAt).String()
		}
		out = append(out, a)
	}
	return out, nil
}
