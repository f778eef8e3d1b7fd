package auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// FileName is the store's file inside its directory.
const FileName = "auth.json"

// Store holds users and ACLs, durably. Readers (every authenticated
// request) load an immutable snapshot through an atomic pointer and never
// lock; writers serialize on mu, build the next snapshot, write it to disk
// (temp file, fsync, rename, fsync of the directory) and only then publish
// it. A change is therefore visible to the next request on every
// connection, and a change that returned nil survives a crash.
type Store struct {
	path string // "" = memory only (tests, name servers without a data dir)

	mu   sync.Mutex               // serializes writers; readers never take it
	snap atomic.Pointer[snapshot] // current state; replaced whole, never mutated
}

// snapshot is one immutable state. userEntry.macs is the only mutable part
// (a pool, safe for concurrent use).
type snapshot struct {
	version int64                 // incremented by every change; persisted
	users   map[string]*userEntry // by username
	acls    map[string]*ACL       // by username (subject "User:<name>")
}

// userEntry is a user and its keyed HMAC-SHA1 states: a verified request
// costs a Reset instead of a new keyed hash (two SHA-1 states and the key
// pads) per request.
type userEntry struct {
	user User
	macs sync.Pool // hash.Hash keyed with user.Password
}

func newUserEntry(u User) *userEntry {
	e := &userEntry{user: u}
	key := []byte(u.Password)
	e.macs.New = func() any { return hmac.New(sha1.New, key) }
	return e
}

func (e *userEntry) getMAC() hash.Hash {
	h := e.macs.Get().(hash.Hash)
	h.Reset()
	return h
}

func (e *userEntry) putMAC(h hash.Hash) { e.macs.Put(h) }

// Open loads dir/auth.json (an absent file is an empty store) and keeps
// writing there. dir "" keeps everything in memory.
func Open(dir string) (*Store, error) {
	s := &Store{}
	empty := &snapshot{users: map[string]*userEntry{}, acls: map[string]*ACL{}}
	s.snap.Store(empty)
	if dir == "" {
		return s, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	s.path = filepath.Join(dir, FileName)
	// A temp file is a write that never reached its rename: the file it
	// would have replaced is still whole, so drop it.
	_ = os.Remove(s.path + ".tmp")
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	snap, err := decodeSnapshot(data)
	if err != nil {
		return nil, fmt.Errorf("auth: %s: %w", s.path, err)
	}
	s.snap.Store(snap)
	return s, nil
}

// Path is the file the store writes ("" in memory).
func (s *Store) Path() string { return s.path }

// Version counts changes; a replica compares it to decide whether to copy.
func (s *Store) Version() int64 { return s.snap.Load().version }

// User returns the user named username.
func (s *Store) User(username string) (User, bool) {
	e := s.snap.Load().users[username]
	if e == nil {
		return User{}, false
	}
	return e.user, true
}

// IsSuper reports whether username is an existing Super user.
func (s *Store) IsSuper(username string) bool {
	u, ok := s.User(username)
	return ok && u.Type == UserSuper
}

// Users lists the users whose name contains filter ("" = all), by name.
func (s *Store) Users(filter string) []User {
	snap := s.snap.Load()
	out := make([]User, 0, len(snap.users))
	for name, e := range snap.users {
		if filter == "" || strings.Contains(name, filter) {
			out = append(out, e.user)
		}
	}
	slices.SortFunc(out, func(a, b User) int { return strings.Compare(a.Username, b.Username) })
	return out
}

// Authorize decides checks for username from ip (see snapshot.authorize).
func (s *Store) Authorize(username string, checks []Check, ip netip.Addr, rules SystemRules) error {
	return s.snap.Load().authorize(username, checks, ip, rules)
}

// UserUpdate is a partial user change: empty or nil fields keep theirs.
type UserUpdate struct {
	Password string
	Type     *UserType
	Status   *UserStatus
}

// CreateUser adds u (AUTH_CREATE_USER). A blank name or password, or an
// existing user, is refused in RocketMQ's words.
func (s *Store) CreateUser(u User) error {
	if strings.TrimSpace(u.Username) == "" {
		return refusef("username can not be blank")
	}
	if strings.TrimSpace(u.Password) == "" {
		return refusef("password can not be blank")
	}
	return s.change(func(next *snapshot) error {
		if next.users[u.Username] != nil {
			return refusef("The user is existed")
		}
		next.users[u.Username] = newUserEntry(u)
		return nil
	})
}

// EnsureUser creates u unless a user of that name exists (the broker's
// initAuthenticationUser and innerClientAuthenticationCredentials at
// start: an operator's later change of that user is kept).
func (s *Store) EnsureUser(u User) error {
	if _, ok := s.User(u.Username); ok {
		return nil
	}
	if err := s.CreateUser(u); err != nil {
		var ae *Error
		if errors.As(err, &ae) && ae.Msg == "The user is existed" {
			return nil
		}
		return err
	}
	return nil
}

// UpdateUser changes an existing user (AUTH_UPDATE_USER).
func (s *Store) UpdateUser(username string, up UserUpdate) error {
	if strings.TrimSpace(username) == "" {
		return refusef("username can not be blank")
	}
	return s.change(func(next *snapshot) error {
		old := next.users[username]
		if old == nil {
			return refusef("The user is not exist")
		}
		u := old.user
		if strings.TrimSpace(up.Password) != "" {
			u.Password = up.Password
		}
		if up.Type != nil {
			u.Type = *up.Type
		}
		if up.Status != nil {
			u.Status = *up.Status
		}
		next.users[username] = newUserEntry(u)
		return nil
	})
}

// DeleteUser removes a user and its ACL (AUTH_DELETE_USER). Deleting an
// absent user succeeds, as in RocketMQ.
func (s *Store) DeleteUser(username string) error {
	if strings.TrimSpace(username) == "" {
		return refusef("username can not be blank")
	}
	if _, ok := s.User(username); !ok {
		return nil
	}
	return s.change(func(next *snapshot) error {
		delete(next.users, username)
		delete(next.acls, username)
		return nil
	})
}

// PutACL merges acl into its subject's ACL (AUTH_CREATE_ACL and
// AUTH_UPDATE_ACL, which RocketMQ treats alike): an entry whose resource
// is new is added; an entry for a resource already present replaces that
// entry's actions, source IPs and decision. The subject must be an
// existing user; resources need not exist.
func (s *Store) PutACL(acl ACL) error {
	name, err := ParseSubject(acl.Subject)
	if err != nil {
		return err
	}
	if len(acl.Policies) == 0 {
		return refusef("The policies is empty.")
	}
	for pi := range acl.Policies {
		p := &acl.Policies[pi]
		if len(p.Entries) == 0 {
			return refusef("The policy entries is empty.")
		}
		for ei := range p.Entries {
			if err := p.Entries[ei].validate(); err != nil {
				return err
			}
		}
	}
	return s.change(func(next *snapshot) error {
		if next.users[name] == nil {
			return refusef("The subject of User:%s is not exist.", name)
		}
		merged := cloneACL(next.acls[name])
		merged.Subject = subjectUserPrefix + name
		for _, p := range acl.Policies {
			merged.merge(p)
		}
		next.acls[name] = merged
		return nil
	})
}

// merge adds p's entries to a's policy of p's type, replacing entries of
// equal resource.
func (a *ACL) merge(p Policy) {
	var target *Policy
	for i := range a.Policies {
		if a.Policies[i].Type == p.Type {
			target = &a.Policies[i]
		}
	}
	if target == nil {
		a.Policies = append(a.Policies, Policy{Type: p.Type})
		target = &a.Policies[len(a.Policies)-1]
	}
	for _, e := range p.Entries {
		i := slices.IndexFunc(target.Entries, func(old Entry) bool { return old.Resource == e.Resource })
		if i >= 0 {
			target.Entries[i] = e
		} else {
			target.Entries = append(target.Entries, e)
		}
	}
}

// DeleteACL removes subject's entry for resource in the policy of type t,
// or the subject's whole ACL when resource is nil (AUTH_DELETE_ACL). A
// policy left empty is dropped, and an ACL left empty is deleted.
func (s *Store) DeleteACL(subject string, t PolicyType, resource *Resource) error {
	name, err := ParseSubject(subject)
	if err != nil {
		return err
	}
	return s.change(func(next *snapshot) error {
		if next.users[name] == nil {
			return refusef("The subject is not exist.")
		}
		old := next.acls[name]
		if old == nil {
			return refusef("The acl is not exist.")
		}
		if resource == nil {
			delete(next.acls, name)
			return nil
		}
		a := cloneACL(old)
		kept := a.Policies[:0]
		for _, p := range a.Policies {
			if p.Type == t {
				p.Entries = slices.DeleteFunc(p.Entries, func(e Entry) bool { return e.Resource == *resource })
			}
			if len(p.Entries) > 0 {
				kept = append(kept, p)
			}
		}
		a.Policies = kept
		if len(a.Policies) == 0 {
			delete(next.acls, name)
		} else {
			next.acls[name] = a
		}
		return nil
	})
}

// GetACL returns subject's ACL (AUTH_GET_ACL); ok is false when it has
// none. An unknown subject is refused.
func (s *Store) GetACL(subject string) (acl ACL, ok bool, err error) {
	name, err := ParseSubject(subject)
	if err != nil {
		return ACL{}, false, err
	}
	snap := s.snap.Load()
	if snap.users[name] == nil {
		return ACL{}, false, refusef("The subject is not exist.")
	}
	a := snap.acls[name]
	if a == nil {
		return ACL{}, false, nil
	}
	return *cloneACL(a), true, nil
}

// ListACLs returns the ACLs whose subject contains subjectFilter, keeping
// only entries whose resource key contains resourceFilter ("" = no
// filter), by subject (AUTH_LIST_ACL).
func (s *Store) ListACLs(subjectFilter, resourceFilter string) []ACL {
	snap := s.snap.Load()
	var out []ACL
	for _, a := range snap.acls {
		if subjectFilter != "" && !strings.Contains(a.Subject, subjectFilter) {
			continue
		}
		c := cloneACL(a)
		if resourceFilter != "" && !strings.Contains(c.Subject, resourceFilter) {
			kept := c.Policies[:0]
			for _, p := range c.Policies {
				p.Entries = slices.DeleteFunc(p.Entries, func(e Entry) bool {
					return !strings.Contains(e.Resource.Key(), resourceFilter)
				})
				if len(p.Entries) > 0 {
					kept = append(kept, p)
				}
			}
			c.Policies = kept
			if len(c.Policies) == 0 {
				continue
			}
		}
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b ACL) int { return strings.Compare(a.Subject, b.Subject) })
	return out
}

// Export returns the whole state in the file format (passwords included:
// it is what a slave copies from its master).
func (s *Store) Export() []byte { return s.snap.Load().encode() }

// Replace installs a state exported by another store (a slave copying its
// master) if its version differs from ours.
func (s *Store) Replace(data []byte) (changed bool, err error) {
	snap, err := decodeSnapshot(data)
	if err != nil {
		return false, fmt.Errorf("auth: replace: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.snap.Load()
	if cur.version == snap.version && string(cur.encode()) == string(data) {
		return false, nil
	}
	if err := s.persistLocked(snap); err != nil {
		return false, err
	}
	s.snap.Store(snap)
	return true, nil
}

// change applies fn to a copy of the current state and, if fn succeeds,
// persists and publishes the copy.
func (s *Store) change(fn func(next *snapshot) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.snap.Load()
	next := &snapshot{
		version: cur.version + 1,
		users:   make(map[string]*userEntry, len(cur.users)+1),
		acls:    make(map[string]*ACL, len(cur.acls)+1),
	}
	for k, v := range cur.users {
		next.users[k] = v // entries are immutable apart from their pools
	}
	for k, v := range cur.acls {
		next.acls[k] = v // replaced, never mutated, by changes
	}
	if err := fn(next); err != nil {
		return err
	}
	if err := s.persistLocked(next); err != nil {
		return err
	}
	s.snap.Store(next)
	return nil
}

// persistLocked writes snap to the store's file atomically. REQUIRES: s.mu
// held.
func (s *Store) persistLocked(snap *snapshot) error {
	if s.path == "" {
		return nil
	}
	return writeFileAtomic(s.path, snap.encode())
}

// writeFileAtomic replaces path with data so that a crash at any point
// leaves either the old or the new file whole: temp file, fsync, rename,
// fsync of the directory (without which the rename itself may be lost).
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("auth: write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("auth: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("auth: fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("auth: close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("auth: rename %s: %w", tmp, err)
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("auth: fsync dir of %s: %w", path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("auth: fsync dir of %s: %w", path, err)
	}
	return nil
}

func cloneACL(a *ACL) *ACL {
	if a == nil {
		return &ACL{}
	}
	c := &ACL{Subject: a.Subject, Policies: make([]Policy, len(a.Policies))}
	for i, p := range a.Policies {
		c.Policies[i] = Policy{Type: p.Type, Entries: slices.Clone(p.Entries)}
	}
	return c
}

// fileState is the on-disk format of auth.json (and of the body a slave
// copies). Users and ACLs use the wire shapes of AUTH_* bodies.
//
//	{"version":7,
//	 "users":[{"username":"rocketmq","password":"...","userType":"Super","userStatus":"enable"}],
//	 "acls":[{"subject":"User:alice","policies":[{"policyType":"Custom",
//	          "entries":[{"resource":"Topic:orders","actions":["Pub"],"sourceIps":[],"decision":"Allow"}]}]}]}
//
// Part of the on-disk format; fields may be added, never renamed.
type fileState struct {
	Version int64      `json:"version"`
	Users   []UserInfo `json:"users"`
	ACLs    []ACLInfo  `json:"acls"`
}

func (snap *snapshot) encode() []byte {
	st := fileState{Version: snap.version, Users: []UserInfo{}, ACLs: []ACLInfo{}}
	names := make([]string, 0, len(snap.users))
	for n := range snap.users {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		st.Users = append(st.Users, UserToInfo(snap.users[n].user, true))
	}
	subjects := make([]string, 0, len(snap.acls))
	for n := range snap.acls {
		subjects = append(subjects, n)
	}
	slices.Sort(subjects)
	for _, n := range subjects {
		st.ACLs = append(st.ACLs, ACLToInfo(*snap.acls[n]))
	}
	data, err := json.Marshal(st)
	if err != nil {
		panic(fmt.Sprintf("auth: encode state: %v", err)) // plain strings and slices: cannot fail
	}
	return data
}

func decodeSnapshot(data []byte) (*snapshot, error) {
	var st fileState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	snap := &snapshot{version: st.Version, users: map[string]*userEntry{}, acls: map[string]*ACL{}}
	for _, ui := range st.Users {
		u, err := ui.User()
		if err != nil {
			return nil, fmt.Errorf("user %q: %w", ui.Username, err)
		}
		if u.Username == "" {
			return nil, errors.New("user without a name")
		}
		snap.users[u.Username] = newUserEntry(u)
	}
	for _, ai := range st.ACLs {
		a, err := ai.ACL()
		if err != nil {
			return nil, fmt.Errorf("acl %q: %w", ai.Subject, err)
		}
		name, err := ParseSubject(a.Subject)
		if err != nil {
			return nil, err
		}
		snap.acls[name] = &a
	}
	return snap, nil
}
