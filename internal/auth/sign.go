package auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"hash"
	"slices"
	"sync"
	"unsafe"

	"github.com/apogeemq/apogee/internal/protocol"
)

// Ext field names of a signed remoting request (RocketMQ's
// SessionCredentials). Part of the wire protocol.
const (
	FieldAccessKey     = "AccessKey"
	FieldSignature     = "Signature"
	FieldSecurityToken = "SecurityToken"
	// fieldUniqueKeyQuery is left out of the signed content of requests
	// from clients at V4_9_3 (399) or older, as RocketMQ does.
	fieldUniqueKeyQuery = "_UNIQUE_KEY_QUERY"
	versionV4_9_3       = 399
)

// The signed content of a remoting request (docs/security.md):
//
//	content   = value(k1) value(k2) ... value(kn) body
//	k1 < ... < kn: every ext field name except Signature, sorted by bytes
//	Signature = base64(HMAC-SHA1(key = secret key, data = content))
//
// Values are concatenated without separators. The signer puts AccessKey
// (and SecurityToken, which the Go v2 client leaves out of its content)
// among the ext fields before signing.

// Refusals without variable parts are shared values (never modified), so a
// flood of bad requests does not allocate an error each.
var (
	errBadSignature = &Error{Msg: "check signature failed."}
	errNoUsername   = &Error{Msg: "username cannot be null."}
)

// scratch is per-verification working memory, pooled so that a verified
// request allocates nothing.
type scratch struct {
	keys []string
	sum  [sha1.Size]byte
	sig  [32]byte // base64-decoded Signature (20 bytes; room for padding slop)
}

// Verifier checks remoting signatures against a Store. Safe for concurrent
// use; it holds no state beyond pooled scratch space.
type Verifier struct {
	store   *Store
	scratch sync.Pool
}

// NewVerifier returns a verifier over s.
func NewVerifier(s *Store) *Verifier {
	v := &Verifier{store: s}
	v.scratch.New = func() any { return &scratch{keys: make([]string, 0, 32)} }
	return v
}

// Store is the store the verifier reads.
func (v *Verifier) Store() *Store { return v.store }

// AuthenticateRemoting verifies req's signature and returns the access key
// (the username). Refusals are *Error in RocketMQ's words: no AccessKey
// "username cannot be null.", unknown user "User:<ak> is not found.",
// disabled "User:<ak> is disabled.", bad or missing signature "check
// signature failed.".
func (v *Verifier) AuthenticateRemoting(req *protocol.Command) (string, error) {
	ak := req.Ext(FieldAccessKey)
	if ak == "" {
		return "", errNoUsername
	}
	u := v.store.snap.Load().users[ak]
	if u == nil {
		return ak, refusef("User:%s is not found.", ak)
	}
	if u.user.Status == StatusDisable {
		return ak, refusef("User:%s is disabled.", ak)
	}
	sig := req.Ext(FieldSignature)
	sc := v.scratch.Get().(*scratch)
	defer v.scratch.Put(sc)
	n, err := base64.StdEncoding.Decode(sc.sig[:], stringBytes(sig))
	if sig == "" || err != nil || n != sha1.Size {
		return ak, errBadSignature
	}
	h := u.getMAC()
	defer u.putMAC(h)
	writeContent(h, req, sc, false)
	if hmac.Equal(h.Sum(sc.sum[:0]), sc.sig[:n]) {
		return ak, nil
	}
	// The Go v2 client sends SecurityToken but leaves it out of the content
	// it signs; accept that form too.
	if req.Ext(FieldSecurityToken) != "" {
		h.Reset()
		writeContent(h, req, sc, true)
		if hmac.Equal(h.Sum(sc.sum[:0]), sc.sig[:n]) {
			return ak, nil
		}
	}
	return ak, errBadSignature
}

// writeContent feeds req's signed content to h. Keys are sorted in
// sc.keys; a key present in both ExtFields and ExtList (never produced by
// our encoders) counts once, with ExtFields' value, as req.Ext reads it.
func writeContent(h hash.Hash, req *protocol.Command, sc *scratch, skipToken bool) {
	keys := sc.keys[:0]
	skipUnique := req.Version <= versionV4_9_3
	for k := range req.ExtFields {
		keys = appendSigned(keys, k, skipUnique, skipToken)
	}
	for i := 0; i+1 < len(req.ExtList); i += 2 {
		if _, dup := req.ExtFields[req.ExtList[i]]; !dup {
			keys = appendSigned(keys, req.ExtList[i], skipUnique, skipToken)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		h.Write(stringBytes(req.Ext(k)))
	}
	clear(keys) // the pool must not pin the request's strings
	sc.keys = keys[:0]
	h.Write(req.Body)
}

func appendSigned(keys []string, k string, skipUnique, skipToken bool) []string {
	if k == FieldSignature || (skipUnique && k == fieldUniqueKeyQuery) || (skipToken && k == FieldSecurityToken) {
		return keys
	}
	return append(keys, k)
}

// SignRemoting signs req in place as RocketMQ clients do: it sets
// AccessKey (and SecurityToken when token is not ""), then Signature over
// the content. Signing a request again (a retry) replaces both.
func SignRemoting(req *protocol.Command, accessKey, secretKey, token string) {
	(&Signer{AccessKey: accessKey, SecretKey: secretKey, SecurityToken: token}).Sign(req)
}

// Signer signs requests with one credential; a nil *Signer signs nothing.
// Safe for concurrent use: keyed HMAC states are pooled per Signer, so
// signing costs no key setup after the first requests.
type Signer struct {
	AccessKey, SecretKey, SecurityToken string

	once    sync.Once
	macs    sync.Pool // hash.Hash keyed with SecretKey
	scratch sync.Pool // *scratch
}

// Sign signs req (see SignRemoting). It is the remoting client's Sign hook.
func (s *Signer) Sign(req *protocol.Command) {
	if s == nil || s.AccessKey == "" {
		return
	}
	s.once.Do(func() {
		key := []byte(s.SecretKey)
		s.macs.New = func() any { return hmac.New(sha1.New, key) }
		s.scratch.New = func() any { return &scratch{keys: make([]string, 0, 32)} }
	})
	setExt(req, FieldAccessKey, s.AccessKey)
	if s.SecurityToken != "" {
		setExt(req, FieldSecurityToken, s.SecurityToken)
	}
	h := s.macs.Get().(hash.Hash)
	h.Reset()
	sc := s.scratch.Get().(*scratch)
	writeContent(h, req, sc, false)
	sum := h.Sum(sc.sum[:0])
	setExt(req, FieldSignature, base64.StdEncoding.EncodeToString(sum))
	s.scratch.Put(sc)
	s.macs.Put(h)
}

// setExt sets an ext field, appending to ExtList when the command uses
// only a list (the SDK's hot send path) so that signing does not turn it
// into a map that every encode must sort.
func setExt(req *protocol.Command, key, value string) {
	if req.ExtFields == nil && len(req.ExtList) > 0 {
		for i := 0; i+1 < len(req.ExtList); i += 2 {
			if req.ExtList[i] == key {
				req.ExtList[i+1] = value
				return
			}
		}
		req.ExtList = append(req.ExtList, key, value)
		return
	}
	req.SetExt(key, value)
}

// stringBytes views s as bytes without copying; the hash and the decoder
// only read it.
func stringBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
