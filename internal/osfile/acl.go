package osfile

// This file decides, as pure functions of a Windows security descriptor's
// owner and DACL, whether a file is the user's own and who else may write
// to it. owner_windows.go reads the descriptor; the decisions are tested
// on every system.

// Well-known SIDs the decisions name.
const (
	sidEveryone           = "S-1-1-0"
	sidCreatorOwner       = "S-1-3-0"
	sidOwnerRights        = "S-1-3-4"
	sidAuthenticatedUsers = "S-1-5-11"
	sidSystem             = "S-1-5-18"
	sidAdministrators     = "S-1-5-32-544"
	sidUsers              = "S-1-5-32-545"
)

// aceKind is what an access-control entry does.
type aceKind uint8

const (
	aceOther aceKind = iota // audit, alarm, or a conditional deny: grants nothing, and is not counted on to deny
	aceAllow                // any access-allowed type, conditional ones included (they may apply)
	aceDeny                 // ACCESS_DENIED_ACE_TYPE
)

// ACE header flags that matter (winnt.h).
const (
	aceObjectInherit    = 0x01
	aceContainerInherit = 0x02
	aceInheritOnly      = 0x08
	aceInherited        = 0x10
)

// Access-mask bits (winnt.h). writeRights are those that let their holder
// change what the file or directory holds, or give itself that right:
// writing or appending data (adding files or subdirectories to a
// directory), deleting its children or it, and changing its DACL or owner.
// Attributes and extended attributes are left out: they change no content.
const (
	fileWriteData   = 0x00000002 // FILE_ADD_FILE on a directory
	fileAppendData  = 0x00000004 // FILE_ADD_SUBDIRECTORY on a directory
	fileDeleteChild = 0x00000040
	rightDelete     = 0x00010000
	rightWriteDAC   = 0x00040000
	rightWriteOwner = 0x00080000
	genericAll      = 0x10000000
	genericWrite    = 0x40000000

	writeRights = fileWriteData | fileAppendData | fileDeleteChild | rightDelete | rightWriteDAC | rightWriteOwner
)

// ace is one access-control entry of a DACL, as far as the decisions go.
type ace struct {
	kind  aceKind
	flags uint8  // ACE_HEADER.AceFlags
	mask  uint32 // ACCESS_MASK
	sid   string
}

// securityInfo is a file's owner and DACL.
type securityInfo struct {
	owner string
	// nullDACL: the descriptor has no DACL, or a NULL one: everyone has
	// every right.
	nullDACL bool
	dacl     []ace
}

// ownerIsUser reports whether a file owned by owner is the user's: the
// owner is the user's SID, or the Administrators group for a process that
// runs elevated as a member of it (Windows makes the group, not the
// administrator, the owner of what such a process creates). A file owned
// by SYSTEM or by anyone else is not the user's.
func ownerIsUser(owner, user string, elevatedAdmin bool) bool {
	return owner == user || (owner == sidAdministrators && elevatedAdmin)
}

// trustedWriter reports whether sid's write access to a file of owner,
// used by user, leaves it the user's own: the user and the owner
// themselves, SYSTEM and the Administrators (who can take any file
// anyway), OWNER RIGHTS (the owner), and CREATOR OWNER (which stands for
// whoever creates a child: here the user).
func trustedWriter(sid, owner, user string) bool {
	switch sid {
	case user, owner, sidSystem, sidAdministrators, sidOwnerRights, sidCreatorOwner:
		return true
	}
	return false
}

// writeMask is the write rights mask grants, generic rights mapped to the
// file rights they stand for.
func writeMask(mask uint32) uint32 {
	if mask&genericAll != 0 {
		mask |= writeRights
	}
	if mask&genericWrite != 0 {
		mask |= fileWriteData | fileAppendData
	}
	return mask & writeRights
}

// untrustedWriters returns the SIDs, other than the trusted ones (see
// trustedWriter), to which sec's DACL gives a write right: on the file
// itself, and for a directory also on the files and directories created in
// it, through inheritable entries (what wazero writes into a cache dir
// inherits them). Entries are evaluated as Windows evaluates them, in
// order: a right an earlier deny entry refused to the same SID, or to
// Everyone, is not granted by a later allow entry. A deny entry for a group
// is not counted on against an allow for another SID, whose members it may
// not cover; a deny entry placed after the allow (an inherited deny below
// an explicit allow) does not take back what the allow gave; an
// inherit-only entry applies to children only. A NULL DACL lets Everyone
// write.
func untrustedWriters(sec securityInfo, user string, dir bool) []string {
	if sec.nullDACL {
		return []string{sidEveryone}
	}
	var writers []string
	seen := map[string]bool{}
	add := func(sid string) {
		if !seen[sid] {
			seen[sid] = true
			writers = append(writers, sid)
		}
	}
	// On the object itself: every entry but inherit-only ones.
	for _, sid := range evaluate(sec.dacl, sec.owner, user, func(e ace) bool { return e.flags&aceInheritOnly == 0 }) {
		add(sid)
	}
	if dir {
		// On children: the inheritable entries, in the same order.
		for _, sid := range evaluate(sec.dacl, sec.owner, user, func(e ace) bool {
			return e.flags&(aceObjectInherit|aceContainerInherit) != 0
		}) {
			add(sid)
		}
	}
	return writers
}

// evaluate runs the entries applies selects in order and returns the
// untrusted SIDs left with a write right.
func evaluate(dacl []ace, owner, user string, applies func(ace) bool) []string {
	denied := map[string]uint32{}
	var writers []string
	for _, e := range dacl {
		if !applies(e) {
			continue
		}
		switch e.kind {
		case aceDeny:
			denied[e.sid] |= writeMask(e.mask)
		case aceAllow:
			if trustedWriter(e.sid, owner, user) {
				continue
			}
			if writeMask(e.mask)&^denied[e.sid]&^denied[sidEveryone] != 0 {
				writers = append(writers, e.sid)
			}
		}
	}
	return writers
}
