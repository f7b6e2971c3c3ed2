package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/oci/ocitest"
	"github.com/warden-run/warden/internal/sigverify/sigtest"
)

// The values a module's manifest claims about its signer: warden must
// record none of them.
const (
	claimedSigner = "attacker@evil.example"
	claimedIssuer = "https://evil.example"
)

// pushClaimingSigner pushes module as a CNCF Wasm artifact whose manifest
// annotations claim claimedSigner (as cosign's and the OCI image spec's
// keys would), signed keyless by id.
func (e *registryEnv) pushClaimingSigner(t *testing.T, repo, tag, id string, module []byte) string {
	t.Helper()
	p := e.reg.Pusher(t, repo)
	layer := p.Blob(ocitest.MediaTypeWasmLayer, module)
	cfg := []byte(`{"created":"2026-01-01T00:00:00Z","architecture":"wasm","os":"wasip1","layerDigests":["` + layer.Digest.String() + `"]}`)
	m := p.Push(ocispec.MediaTypeImageManifest, ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    p.Blob(ocitest.MediaTypeWasmConfig, cfg),
		Layers:    []ocispec.Descriptor{layer},
		Annotations: map[string]string{
			ocispec.AnnotationVersion:                     tag,
			ocispec.AnnotationAuthors:                     claimedSigner,
			"dev.sigstore.cosign/certificate-identity":    claimedSigner,
			"dev.sigstore.cosign/certificate-oidc-issuer": claimedIssuer,
			"dev.warden.signer":                           claimedSigner + " (issuer " + claimedIssuer + ")",
		},
	}, tag)
	p.Referrer(m, sigtest.KeylessBundle(t, e.vs, id, oidc, m.Digest.String(), time.Now().Add(5*time.Minute)))
	return m.Digest.String()
}

// toolsSigner runs the real `warden tools` in both formats and returns the
// signer each shows for the released module.
func (e *registryEnv) toolsSigner(t *testing.T) (text, jsonSigner string) {
	t.Helper()
	stdout, stderr, code := e.real(t, "tools")
	if code != 0 {
		t.Fatalf("tools: exit %d\n%s%s", code, stdout, stderr)
	}
	_, after, ok := strings.Cut(stdout, "\nSOURCES (1; tools.sources, the signer as verified at install or update):\n  released: ")
	if !ok {
		t.Fatalf("tools lacks the SOURCES section:\n%s", stdout)
	}
	_, text, _ = strings.Cut(after, "\n    signer: ")
	text, _, _ = strings.Cut(text, "\n")
	stdout, stderr, code = e.real(t, "tools", "-o", "json")
	if code != 0 {
		t.Fatalf("tools -o json: exit %d\n%s%s", code, stdout, stderr)
	}
	var list toolList
	if err := json.Unmarshal([]byte(stdout), &list); err != nil {
		t.Fatalf("tools -o json: %v\n%s", err, stdout)
	}
	if len(list.Tools) != 1 || list.Tools[0].Source == nil {
		t.Fatalf("tools -o json: %s", stdout)
	}
	return text, list.Tools[0].Source.Signer
}

// TestSignerRecorded: install records the signer it verified (the
// certificate's identity and issuer), never what the manifest's
// annotations claim; `warden tools` shows it in text and JSON; a record
// from before signers reads as not recorded and still syncs; a record
// edited to name another signer does not pass: sync re-verifies and
// refuses, changing nothing; an update signed by another identity the
// policy trusts says SIGNER CHANGED and records the new one.
func TestSignerRecorded(t *testing.T) {
	wardenBinary(t) // built before newRegistryEnv points TMPDIR at a dir that must stay empty
	e := newRegistryEnv(t, "")
	e.pushClaimingSigner(t, "acme/released", "1.0.0", signer, e.v1)
	want := signer + " (issuer " + oidc + ")"

	stdout, stderr, code := e.real(t, "install", "--yes", e.ref("acme/released", "1.0.0"))
	if code != 0 {
		t.Fatalf("install: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, w := range []string{"\nSigner   " + want + "\n", ", signer " + want + "\n"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("install output lacks %q:\n%s", w, stdout)
		}
	}
	locked := readFile(t, e.cfgPath)
	if bytes.Contains(locked, []byte("evil.example")) || strings.Contains(stdout, "evil.example") {
		t.Errorf("an annotation's claim was shown or recorded:\n%s\n%s", stdout, locked)
	}
	cfg, err := config.Load(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Tools.Sources["released"].Signer; got != want {
		t.Errorf("tools.sources.released.signer = %q, want %q", got, want)
	}
	if text, js := e.toolsSigner(t); text != want || js != want {
		t.Errorf("warden tools shows signer %q (text), %q (json); want %q", text, js, want)
	}

	// The record as config.EditFile writes it: in the source's flow map.
	recordLine := fmt.Sprintf(", signer: %q", want)
	if !bytes.Contains(locked, []byte(recordLine)) {
		t.Fatalf("config lacks %q:\n%s", recordLine, locked)
	}
	withRecord := func(t *testing.T, line string) {
		t.Helper()
		if err := os.WriteFile(e.cfgPath, bytes.Replace(locked, []byte(recordLine), []byte(line), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(e.tools); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a record from before signers", func(t *testing.T) {
		withRecord(t, "")
		before := readFile(t, e.cfgPath)
		stdout, stderr, code := e.real(t, "sync")
		if code != 0 || !strings.Contains(stdout, "released: fetched") {
			t.Fatalf("sync: exit %d\n%s%s", code, stdout, stderr)
		}
		if !bytes.Equal(readFile(t, e.cfgPath), before) {
			t.Error("sync changed config.yaml")
		}
		if text, js := e.toolsSigner(t); text != config.SignerNotRecorded || js != config.SignerNotRecorded {
			t.Errorf("warden tools shows signer %q (text), %q (json); want %q", text, js, config.SignerNotRecorded)
		}
	})

	t.Run("a tampered record", func(t *testing.T) {
		withRecord(t, fmt.Sprintf(", signer: %q", claimedSigner+" (issuer "+claimedIssuer+")"))
		before := readFile(t, e.cfgPath)
		stdout, stderr, code := e.real(t, "sync")
		if code == 0 {
			t.Fatalf("sync of a tampered record succeeded:\n%s%s", stdout, stderr)
		}
		for _, w := range []string{
			"released: FAILED",
			"signer differs from the install record: tools.sources.released.signer is \"" + claimedSigner + " (issuer " + claimedIssuer + ")\"",
			"verifies as signed by \"" + want + "\": refused, nothing written",
		} {
			if !strings.Contains(stdout+stderr, w) {
				t.Errorf("sync output lacks %q:\n%s%s", w, stdout, stderr)
			}
		}
		e.unchanged(t, before)
	})

	t.Run("an update signed by another trusted identity", func(t *testing.T) {
		// The policy trusts every release workflow tag of acme/tools.
		trustAll := bytes.Replace(locked, []byte(fmt.Sprintf("{identity: %q", signer)),
			[]byte(fmt.Sprintf("{identity_regexp: %q", "https://github.com/acme/tools/.*")), 1)
		if bytes.Equal(trustAll, locked) {
			t.Fatalf("no identity to replace in:\n%s", locked)
		}
		if err := os.WriteFile(e.cfgPath, trustAll, 0o644); err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(e.tools)
		if stdout, stderr, code := e.real(t, "sync"); code != 0 {
			t.Fatalf("sync: exit %d\n%s%s", code, stdout, stderr)
		}
		other := "https://github.com/acme/tools/.github/workflows/release.yml@refs/tags/v2.0.0"
		e.pushClaimingSigner(t, "acme/released", "1.0.0", other, e.v2)
		stdout, stderr, code := e.real(t, "update", "--yes", "--accept-capabilities", "released")
		if code != 0 {
			t.Fatalf("update: exit %d\n%s%s", code, stdout, stderr)
		}
		otherRecord := other + " (issuer " + oidc + ")"
		if w := "released: SIGNER CHANGED from " + want + " to " + otherRecord + "\n"; !strings.Contains(stdout, w) {
			t.Errorf("update output lacks %q:\n%s", w, stdout)
		}
		cfg, err := config.Load(e.cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Tools.Sources["released"].Signer; got != otherRecord {
			t.Errorf("after update tools.sources.released.signer = %q, want %q", got, otherRecord)
		}
	})
}
