// Command interop verifies MemLineage checkpoints, witness cosignatures and Merkle proofs with
// golang.org/x/mod (sumdb/note and sumdb/tlog), an implementation the project did not write.
// It is built offline against Debian's golang-golang-x-mod-dev:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o interop interop.go
//
// Input: a JSON file (see crates/memlineage-cli/tests/go_interop.rs). Output: one line per
// check; exit status 1 on the first failure.
//
// golang.org/x/mod/sumdb/note knows one key type, Ed25519 (0x01): note.NewVerifier refuses
// the 0x04 keys of C2SP tlog-cosignature. note.Open accepts any note.Verifier, so the
// cosignatures are verified through note.Open with the verifier below, which checks
// Go's crypto/ed25519 signature over the exact message C2SP tlog-cosignature specifies:
// "cosignature/v1\ntime <timestamp>\n" followed by the checkpoint body.
package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type consistency struct {
	Old     int64    `json:"old_size"`
	New     int64    `json:"new_size"`
	OldRoot string   `json:"old_root"`
	NewRoot string   `json:"new_root"`
	Path    []string `json:"path"`
}

type inclusion struct {
	Index    int64    `json:"index"`
	Size     int64    `json:"size"`
	LeafHash string   `json:"leaf_hash"`
	Root     string   `json:"root"`
	Path     []string `json:"path"`
}

type input struct {
	LogVkey       string        `json:"log_vkey"`
	WitnessVkeys  []string      `json:"witness_vkeys"`
	Note          string        `json:"note"`
	Leaves        []string      `json:"leaves"`
	Consistencies []consistency `json:"consistency"`
	Inclusions    []inclusion   `json:"inclusion"`
}

// cosigVerifier verifies C2SP tlog-cosignature/v1 (Ed25519, key type 0x04) signature lines.
type cosigVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v *cosigVerifier) Name() string    { return v.name }
func (v *cosigVerifier) KeyHash() uint32 { return v.hash }
func (v *cosigVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	ts := binary.BigEndian.Uint64(sig[:8])
	if ts > 1<<63-1 {
		return false
	}
	m := []byte("cosignature/v1\ntime " + strconv.FormatUint(ts, 10) + "\n")
	m = append(m, msg...)
	return ed25519.Verify(v.key, m, sig[8:])
}

func newCosigVerifier(vkey string) (*cosigVerifier, error) {
	name, rest, ok := strings.Cut(vkey, "+")
	if !ok {
		return nil, fmt.Errorf("malformed witness vkey")
	}
	hashHex, keyB64, ok := strings.Cut(rest, "+")
	if !ok || len(hashHex) != 8 {
		return nil, fmt.Errorf("malformed witness vkey")
	}
	h, err := strconv.ParseUint(hashHex, 16, 32)
	if err != nil {
		return nil, err
	}
	raw, err := base64.StdEncoding.DecodeString(keyB64)
	if err != nil {
		return nil, err
	}
	if len(raw) != 1+ed25519.PublicKeySize || raw[0] != 0x04 {
		return nil, fmt.Errorf("not an Ed25519 cosignature (0x04) key")
	}
	sum := sha256.Sum256(append([]byte(name+"\n"), raw...))
	if binary.BigEndian.Uint32(sum[:4]) != uint32(h) {
		return nil, fmt.Errorf("witness key hash does not match its name and key")
	}
	return &cosigVerifier{name: name, hash: uint32(h), key: ed25519.PublicKey(raw[1:])}, nil
}

func hash(s string) tlog.Hash {
	var h tlog.Hash
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(h) {
		fail("bad hash %q", s)
	}
	copy(h[:], b)
	return h
}

func hashes(ss []string) []tlog.Hash {
	out := make([]tlog.Hash, len(ss))
	for i, s := range ss {
		out[i] = hash(s)
	}
	return out
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 2 {
		fail("usage: interop INPUT.json")
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail("%v", err)
	}
	var in input
	if err := json.Unmarshal(data, &in); err != nil {
		fail("%v", err)
	}

	// The log's verifier key and the signed checkpoint, by x/mod's note package.
	logV, err := note.NewVerifier(in.LogVkey)
	if err != nil {
		fail("note.NewVerifier(log vkey): %v", err)
	}
	verifiers := []note.Verifier{logV}
	for _, vk := range in.WitnessVkeys {
		if _, err := note.NewVerifier(vk); err == nil {
			fail("x/mod unexpectedly accepts the cosignature key %s", vk)
		} else {
			fmt.Printf("ok x/mod note.NewVerifier refuses key type 0x04 (%v); using a cosignature/v1 verifier\n", err)
		}
		cv, err := newCosigVerifier(vk)
		if err != nil {
			fail("%v", err)
		}
		verifiers = append(verifiers, cv)
	}
	n, err := note.Open([]byte(in.Note), note.VerifierList(verifiers...))
	if err != nil {
		fail("note.Open: %v", err)
	}
	if len(n.Sigs) != len(verifiers) || len(n.UnverifiedSigs) != 0 {
		fail("note.Open verified %d signatures (%d unverified), want %d", len(n.Sigs), len(n.UnverifiedSigs), len(verifiers))
	}
	fmt.Printf("ok note.Open verified the log signature and %d cosignature(s)\n", len(verifiers)-1)

	// A tampered note fails.
	bad := strings.Replace(in.Note, "\n", "\n\n", 1)
	if _, err := note.Open([]byte(bad), note.VerifierList(verifiers...)); err == nil {
		fail("note.Open accepted a tampered note")
	}

	// The checkpoint body: origin, size, base64 root.
	lines := strings.Split(strings.TrimSuffix(n.Text, "\n"), "\n")
	if len(lines) < 3 || lines[0] != logV.Name() {
		fail("checkpoint body %q does not start with the origin %q", n.Text, logV.Name())
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		fail("tree size %q: %v", lines[1], err)
	}
	rootBytes, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(rootBytes) != 32 {
		fail("root %q", lines[2])
	}
	var root tlog.Hash
	copy(root[:], rootBytes)

	// The checkpoint's root is the RFC 6962 tree hash of the leaves, by x/mod's tlog.
	if int64(len(in.Leaves)) == size {
		var stored []tlog.Hash
		for i, l := range in.Leaves {
			leaf, err := hex.DecodeString(l)
			if err != nil {
				fail("leaf %d: %v", i, err)
			}
			hs, err := tlog.StoredHashes(int64(i), leaf, tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
				out := make([]tlog.Hash, len(idx))
				for j, x := range idx {
					out[j] = stored[x]
				}
				return out, nil
			}))
			if err != nil {
				fail("tlog.StoredHashes: %v", err)
			}
			stored = append(stored, hs...)
		}
		th, err := tlog.TreeHash(size, tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
			out := make([]tlog.Hash, len(idx))
			for j, x := range idx {
				out[j] = stored[x]
			}
			return out, nil
		}))
		if err != nil {
			fail("tlog.TreeHash: %v", err)
		}
		if th != root {
			fail("tlog.TreeHash of the %d leaves is %s, the checkpoint says %s", size, th, root)
		}
		fmt.Printf("ok tlog.TreeHash of %d leaves equals the checkpoint root\n", size)
	}

	for _, c := range in.Consistencies {
		if c.New == size && hash(c.NewRoot) != root {
			fail("consistency proof's new root differs from the checkpoint's")
		}
		if err := tlog.CheckTree(hashes(c.Path), c.New, hash(c.NewRoot), c.Old, hash(c.OldRoot)); err != nil {
			fail("tlog.CheckTree(%d -> %d): %v", c.Old, c.New, err)
		}
		if len(c.Path) > 0 {
			p := hashes(c.Path)
			p[0][0] ^= 1
			if tlog.CheckTree(p, c.New, hash(c.NewRoot), c.Old, hash(c.OldRoot)) == nil {
				fail("tlog.CheckTree accepted a tampered proof")
			}
		}
		fmt.Printf("ok tlog.CheckTree %d -> %d\n", c.Old, c.New)
	}
	for _, p := range in.Inclusions {
		if err := tlog.CheckRecord(hashes(p.Path), p.Size, hash(p.Root), p.Index, hash(p.LeafHash)); err != nil {
			fail("tlog.CheckRecord(%d in %d): %v", p.Index, p.Size, err)
		}
		other := hash(p.LeafHash)
		other[0] ^= 1
		if tlog.CheckRecord(hashes(p.Path), p.Size, hash(p.Root), p.Index, other) == nil {
			fail("tlog.CheckRecord accepted another leaf")
		}
		fmt.Printf("ok tlog.CheckRecord %d in %d\n", p.Index, p.Size)
	}
	fmt.Println("ALL OK")
}
