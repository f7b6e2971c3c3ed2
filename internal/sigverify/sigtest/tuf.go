package sigtest

import (
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/theupdateframework/go-tuf/v2/metadata"
)

// TUFRepository is a real TUF repository served over http on 127.0.0.1:
// root, targets, snapshot and timestamp metadata made and signed with
// go-tuf v2 (one ed25519 key per role), laid out with consistent snapshots
// as Sigstore's TUF CDN is and as sigstore-go's client fetches it:
//
//	/1.root.json  /timestamp.json  /1.snapshot.json  /1.targets.json
//	/targets/<sha256>.<target name>
//
// Anything else (2.root.json, which the client asks for to find a newer
// root) is 404.
type TUFRepository struct {
	// URL is the repository's base URL (security.tuf_url).
	URL string
	// RootPath is a file holding 1.root.json, the client's initial trust
	// anchor (security.tuf_root).
	RootPath string

	mu       sync.Mutex
	requests []string
}

// NewTUFRepository serves a TUF repository whose top-level targets role
// lists targets (name → content); it is closed when the test ends.
// RootPath is written to dir.
func NewTUFRepository(t testing.TB, dir string, targets map[string][]byte) *TUFRepository {
	t.Helper()
	expires := time.Now().Add(24 * time.Hour).UTC()
	files := map[string][]byte{}

	tg := metadata.Targets(expires)
	for name, content := range targets {
		tf, err := metadata.TargetFile().FromBytes(name, content, "sha256")
		if err != nil {
			t.Fatal(err)
		}
		tg.Signed.Targets[name] = tf
		h := sha256.Sum256(content)
		files["/targets/"+hex.EncodeToString(h[:])+"."+name] = content
	}
	sn := metadata.Snapshot(expires)
	sn.Signed.Meta["targets.json"] = metadata.MetaFile(tg.Signed.Version)
	ts := metadata.Timestamp(expires)
	ts.Signed.Meta["snapshot.json"] = metadata.MetaFile(sn.Signed.Version)
	rt := metadata.Root(expires)

	signers := map[string]signature.Signer{}
	for _, role := range []string{metadata.ROOT, metadata.TARGETS, metadata.SNAPSHOT, metadata.TIMESTAMP} {
		pub, priv, err := ed25519.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		key, err := metadata.KeyFromPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Signed.AddKey(key, role); err != nil {
			t.Fatal(err)
		}
		if signers[role], err = signature.LoadSigner(priv, crypto.Hash(0)); err != nil {
			t.Fatal(err)
		}
	}
	sign := func(name string, sign func(signature.Signer) (*metadata.Signature, error),
		toBytes func(bool) ([]byte, error), role string) {
		if _, err := sign(signers[role]); err != nil {
			t.Fatalf("signing %s: %v", name, err)
		}
		b, err := toBytes(true)
		if err != nil {
			t.Fatal(err)
		}
		files["/"+name] = b
	}
	sign("1.root.json", rt.Sign, rt.ToBytes, metadata.ROOT)
	sign("1.targets.json", tg.Sign, tg.ToBytes, metadata.TARGETS)
	sign("1.snapshot.json", sn.Sign, sn.ToBytes, metadata.SNAPSHOT)
	sign("timestamp.json", ts.Sign, ts.ToBytes, metadata.TIMESTAMP)

	r := &TUFRepository{RootPath: filepath.Join(dir, "tuf-root.json")}
	if err := os.WriteFile(r.RootPath, files["/1.root.json"], 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, req.URL.Path)
		r.mu.Unlock()
		b, ok := files[req.URL.Path]
		if !ok || req.Method != http.MethodGet {
			http.NotFound(w, req)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// TrustedRootTUF serves a TUF repository whose one target,
// trusted_root.json, trusts the virtual Sigstore vs: what Sigstore's TUF
// repository is for the public-good instance.
func TrustedRootTUF(t testing.TB, vs *ca.VirtualSigstore, dir string) *TUFRepository {
	t.Helper()
	b, err := os.ReadFile(TrustedRootFile(t, vs, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	return NewTUFRepository(t, dir, map[string][]byte{"trusted_root.json": b})
}

// Requests returns the paths asked for so far, in order.
func (r *TUFRepository) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}
