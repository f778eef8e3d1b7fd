package admin

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apogeemq/apogee/internal/auth"
	"github.com/apogeemq/apogee/internal/protocol"
)

// WithCredentials signs every request (to name servers and brokers) with
// an ACL 2.0 access key and secret key, as RocketMQ clients do.
func WithCredentials(accessKey, secretKey string) Option {
	return func(c *config) {
		if accessKey != "" {
			c.sign = (&auth.Signer{AccessKey: accessKey, SecretKey: secretKey}).Sign
		}
	}
}

// WithTLS dials every connection with TLS using cfg (nil = plain TCP).
func WithTLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// User is an ACL 2.0 user. Password is only sent (create, update); brokers
// never return it.
type User struct {
	Username   string `json:"username"`
	Password   string `json:"password,omitempty"`
	UserType   string `json:"userType,omitempty"`   // Super or Normal
	UserStatus string `json:"userStatus,omitempty"` // enable or disable
}

// ACL is a subject's policies.
type ACL struct {
	Subject  string   `json:"subject"`
	Policies []Policy `json:"policies"`
}

// Policy is one policy type's entries.
type Policy struct {
	PolicyType string        `json:"policyType"` // Custom or Default
	Entries    []PolicyEntry `json:"entries"`
}

// PolicyEntry grants or denies actions on one resource.
type PolicyEntry struct {
	Resource  string   `json:"resource"` // Topic:orders, Group:g*, Cluster:c, *
	Actions   []string `json:"actions"`  // Pub, Sub, Create, Update, Delete, Get, List, All
	SourceIPs []string `json:"sourceIps,omitempty"`
	Decision  string   `json:"decision"` // Allow or Deny
}

// BrokerResult is one broker's answer to a read applied to several brokers.
type BrokerResult[T any] struct {
	Broker string `json:"broker"`
	Value  T      `json:"value"`
}

// authTargets resolves a target to every broker of the cluster (masters
// and slaves: changes apply at once everywhere) or the one address.
func (a *Admin) authTargets(ctx context.Context, t Target) ([]string, error) {
	switch {
	case t.BrokerAddr != "" && t.Cluster != "":
		return nil, fmt.Errorf("admin: give a cluster or a broker address, not both")
	case t.BrokerAddr != "":
		return []string{t.BrokerAddr}, nil
	case t.Cluster == "":
		return nil, fmt.Errorf("admin: no cluster or broker address given")
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	names, ok := ci.Clusters[t.Cluster]
	if !ok {
		return nil, fmt.Errorf("admin: cluster %s: %w", t.Cluster, ErrNotFound)
	}
	var out []string
	for _, n := range names {
		b := ci.Brokers[n]
		ids := make([]int64, 0, len(b.Addrs))
		for id := range b.Addrs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			out = append(out, b.Addrs[id])
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("admin: cluster %s has no live broker", t.Cluster)
	}
	return out, nil
}

// eachBroker sends one request per target broker; errors name the broker.
func (a *Admin) eachBroker(ctx context.Context, t Target, mk func() *protocol.Command) error {
	addrs, err := a.authTargets(ctx, t)
	if err != nil {
		return err
	}
	var errs []error
	for _, addr := range addrs {
		if _, err := a.invokeOK(ctx, addr, "", mk()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CreateUser creates u on the target brokers (AUTH_CREATE_USER).
func (a *Admin) CreateUser(ctx context.Context, t Target, u User) error {
	return a.putUser(ctx, t, protocol.AuthCreateUser, u)
}

// UpdateUser changes u's password, type or status (the fields set) on the
// target brokers (AUTH_UPDATE_USER).
func (a *Admin) UpdateUser(ctx context.Context, t Target, u User) error {
	return a.putUser(ctx, t, protocol.AuthUpdateUser, u)
}

func (a *Admin) putUser(ctx context.Context, t Target, code protocol.RequestCode, u User) error {
	if u.Username == "" {
		return fmt.Errorf("admin: no username")
	}
	body, err := json.Marshal(auth.UserInfo{Username: u.Username, Password: u.Password, UserType: u.UserType, UserStatus: u.UserStatus})
	if err != nil {
		return err
	}
	return a.eachBroker(ctx, t, func() *protocol.Command {
		return protocol.NewRequest(code, map[string]string{"username": u.Username}, body)
	})
}

// DeleteUser deletes a user and its ACL on the target brokers
// (AUTH_DELETE_USER).
func (a *Admin) DeleteUser(ctx context.Context, t Target, username string) error {
	return a.eachBroker(ctx, t, func() *protocol.Command {
		return protocol.NewRequest(protocol.AuthDeleteUser, map[string]string{"username": username}, nil)
	})
}

// GetUser reads a user from each target broker (AUTH_GET_USER); a broker
// without it answers a nil User.
func (a *Admin) GetUser(ctx context.Context, t Target, username string) ([]BrokerResult[*User], error) {
	return readEach(a, ctx, t, func() *protocol.Command {
		return protocol.NewRequest(protocol.AuthGetUser, map[string]string{"username": username}, nil)
	}, func(body []byte) (*User, error) {
		if len(body) == 0 {
			return nil, nil
		}
		var ui auth.UserInfo
		if err := json.Unmarshal(body, &ui); err != nil {
			return nil, err
		}
		return &User{Username: ui.Username, UserType: ui.UserType, UserStatus: ui.UserStatus}, nil
	})
}

// ListUsers lists the users whose name contains filter on each target
// broker (AUTH_LIST_USER).
func (a *Admin) ListUsers(ctx context.Context, t Target, filter string) ([]BrokerResult[[]User], error) {
	return readEach(a, ctx, t, func() *protocol.Command {
		return protocol.NewRequest(protocol.AuthListUser, map[string]string{"filter": filter}, nil)
	}, func(body []byte) ([]User, error) {
		var infos []auth.UserInfo
		if len(body) > 0 {
			if err := json.Unmarshal(body, &infos); err != nil {
				return nil, err
			}
		}
		out := make([]User, 0, len(infos))
		for _, ui := range infos {
			out = append(out, User{Username: ui.Username, UserType: ui.UserType, UserStatus: ui.UserStatus})
		}
		return out, nil
	})
}

// ACLRequest is what createAcl / updateAcl send: one Custom policy entry
// per resource, all with the same actions, source IPs and decision.
type ACLRequest struct {
	Subject   string   // User:alice
	Resources []string // Topic:orders, Group:g1, ...
	Actions   []string // Pub, Sub, ...
	SourceIPs []string
	Decision  string // Allow or Deny
}

func (r ACLRequest) body() ([]byte, error) {
	if r.Subject == "" || len(r.Resources) == 0 || len(r.Actions) == 0 || r.Decision == "" {
		return nil, fmt.Errorf("admin: an ACL needs a subject, resources, actions and a decision")
	}
	p := auth.PolicyInfo{PolicyType: "Custom"}
	for _, res := range r.Resources {
		p.Entries = append(p.Entries, auth.EntryInfo{Resource: res, Actions: r.Actions, SourceIPs: r.SourceIPs, Decision: r.Decision})
	}
	return json.Marshal(auth.ACLInfo{Subject: r.Subject, Policies: []auth.PolicyInfo{p}})
}

// CreateACL adds entries to the subject's ACL on the target brokers
// (AUTH_CREATE_ACL); an entry for a resource already there is replaced.
func (a *Admin) CreateACL(ctx context.Context, t Target, r ACLRequest) error {
	return a.putACL(ctx, t, protocol.AuthCreateACL, r)
}

// UpdateACL replaces the actions, source IPs and decision of the
// subject's entries for r.Resources (adding missing ones) (AUTH_UPDATE_ACL).
func (a *Admin) UpdateACL(ctx context.Context, t Target, r ACLRequest) error {
	return a.putACL(ctx, t, protocol.AuthUpdateACL, r)
}

func (a *Admin) putACL(ctx context.Context, t Target, code protocol.RequestCode, r ACLRequest) error {
	body, err := r.body()
	if err != nil {
		return err
	}
	return a.eachBroker(ctx, t, func() *protocol.Command {
		return protocol.NewRequest(code, map[string]string{"subject": r.Subject}, body)
	})
}

// DeleteACL deletes the subject's entries for resources, or its whole ACL
// when resources is empty (AUTH_DELETE_ACL), on the target brokers.
func (a *Admin) DeleteACL(ctx context.Context, t Target, subject string, resources []string) error {
	if len(resources) == 0 {
		resources = []string{""}
	}
	for _, res := range resources {
		ext := map[string]string{"subject": subject}
		if res != "" {
			ext["resource"] = res
		}
		if err := a.eachBroker(ctx, t, func() *protocol.Command {
			return protocol.NewRequest(protocol.AuthDeleteACL, maps.Clone(ext), nil)
		}); err != nil {
			return err
		}
	}
	return nil
}

// GetACL reads the subject's ACL from each target broker (AUTH_GET_ACL);
// nil when it has none.
func (a *Admin) GetACL(ctx context.Context, t Target, subject string) ([]BrokerResult[*ACL], error) {
	return readEach(a, ctx, t, func() *protocol.Command {
		return protocol.NewRequest(protocol.AuthGetACL, map[string]string{"subject": subject}, nil)
	}, func(body []byte) (*ACL, error) {
		if len(body) == 0 {
			return nil, nil
		}
		var ai auth.ACLInfo
		if err := json.Unmarshal(body, &ai); err != nil {
			return nil, err
		}
		acl := aclFromInfo(ai)
		return &acl, nil
	})
}

// ListACLs lists ACLs whose subject contains subjectFilter, with the
// entries whose resource contains resourceFilter (AUTH_LIST_ACL).
func (a *Admin) ListACLs(ctx context.Context, t Target, subjectFilter, resourceFilter string) ([]BrokerResult[[]ACL], error) {
	return readEach(a, ctx, t, func() *protocol.Command {
		return protocol.NewRequest(protocol.AuthListACL, map[string]string{"subjectFilter": subjectFilter, "resourceFilter": resourceFilter}, nil)
	}, func(body []byte) ([]ACL, error) {
		var infos []auth.ACLInfo
		if len(body) > 0 {
			if err := json.Unmarshal(body, &infos); err != nil {
				return nil, err
			}
		}
		out := make([]ACL, 0, len(infos))
		for _, ai := range infos {
			out = append(out, aclFromInfo(ai))
		}
		return out, nil
	})
}

func aclFromInfo(ai auth.ACLInfo) ACL {
	acl := ACL{Subject: ai.Subject}
	for _, p := range ai.Policies {
		pol := Policy{PolicyType: p.PolicyType}
		for _, e := range p.Entries {
			pol.Entries = append(pol.Entries, PolicyEntry{Resource: e.Resource, Actions: e.Actions, SourceIPs: e.SourceIPs, Decision: e.Decision})
		}
		acl.Policies = append(acl.Policies, pol)
	}
	return acl
}

// readEach sends one read per target broker and decodes each answer.
func readEach[T any](a *Admin, ctx context.Context, t Target, mk func() *protocol.Command, decode func([]byte) (T, error)) ([]BrokerResult[T], error) {
	addrs, err := a.authTargets(ctx, t)
	if err != nil {
		return nil, err
	}
	var out []BrokerResult[T]
	for _, addr := range addrs {
		resp, err := a.invokeOK(ctx, addr, "", mk())
		if err != nil {
			return nil, err
		}
		v, err := decode(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("admin: decode answer of %s: %w", strings.TrimSpace(addr), err)
		}
		out = append(out, BrokerResult[T]{Broker: addr, Value: v})
	}
	return out, nil
}

// CopyUsers copies users, with their passwords, from one broker to another
// (mqadmin's copyUser): the named ones, or every user when usernames is
// empty; a user the target has is updated, others are created. Passwords
// are never returned by getUser, so the source is read with AUTH_EXPORT,
// which only the brokers' innerClientAuthenticationCredentials user may
// send: sign with those credentials. It returns the names copied.
func (a *Admin) CopyUsers(ctx context.Context, from, to string, usernames []string) ([]string, error) {
	resp, err := a.invokeOK(ctx, from, "", protocol.NewRequest(protocol.AuthExport, nil, nil))
	if err != nil {
		return nil, fmt.Errorf("admin: read the users of %s (sign as the inner-client user): %w", from, err)
	}
	var st struct {
		Users []auth.UserInfo `json:"users"`
	}
	if err := json.Unmarshal(resp.Body, &st); err != nil {
		return nil, fmt.Errorf("admin: users of %s: %w", from, err)
	}
	byName := make(map[string]auth.UserInfo, len(st.Users))
	for _, u := range st.Users {
		byName[u.Username] = u
	}
	if len(usernames) == 0 {
		usernames = slices.Sorted(maps.Keys(byName))
	}
	target := Target{BrokerAddr: to}
	var copied []string
	for _, name := range usernames {
		ui, ok := byName[name]
		if !ok {
			return copied, fmt.Errorf("admin: user %s not found on %s: %w", name, from, ErrNotFound)
		}
		have, err := a.GetUser(ctx, target, name)
		if err != nil {
			return copied, err
		}
		u := User{Username: ui.Username, Password: ui.Password, UserType: ui.UserType, UserStatus: ui.UserStatus}
		if len(have) > 0 && have[0].Value != nil {
			err = a.UpdateUser(ctx, target, u)
		} else {
			err = a.CreateUser(ctx, target, u)
		}
		if err != nil {
			return copied, fmt.Errorf("admin: copy user %s to %s: %w", name, to, err)
		}
		copied = append(copied, name)
	}
	return copied, nil
}

// CopyACLs copies ACLs, every policy and entry, from one broker to another
// (mqadmin's copyAcl): the named subjects ("User:alice"), or every ACL
// when subjects is empty. Entries merge into the target's ACL of the
// subject (an entry for a resource it has is replaced). It returns the
// subjects copied.
func (a *Admin) CopyACLs(ctx context.Context, from, to string, subjects []string) ([]string, error) {
	src := Target{BrokerAddr: from}
	var acls []ACL
	if len(subjects) == 0 {
		res, err := a.ListACLs(ctx, src, "", "")
		if err != nil {
			return nil, err
		}
		if len(res) > 0 {
			acls = res[0].Value
		}
	} else {
		for _, s := range subjects {
			res, err := a.GetACL(ctx, src, s)
			if err != nil {
				return nil, err
			}
			if len(res) == 0 || res[0].Value == nil {
				return nil, fmt.Errorf("admin: ACL of %s not found on %s: %w", s, from, ErrNotFound)
			}
			acls = append(acls, *res[0].Value)
		}
	}
	var copied []string
	for _, acl := range acls {
		info := auth.ACLInfo{Subject: acl.Subject}
		for _, p := range acl.Policies {
			pi := auth.PolicyInfo{PolicyType: p.PolicyType}
			for _, e := range p.Entries {
				pi.Entries = append(pi.Entries, auth.EntryInfo{Resource: e.Resource, Actions: e.Actions, SourceIPs: e.SourceIPs, Decision: e.Decision})
			}
			info.Policies = append(info.Policies, pi)
		}
		body, err := json.Marshal(info)
		if err != nil {
			return copied, err
		}
		if _, err := a.invokeOK(ctx, to, "", protocol.NewRequest(protocol.AuthCreateACL, map[string]string{"subject": acl.Subject}, body)); err != nil {
			return copied, fmt.Errorf("admin: copy the ACL of %s to %s: %w", acl.Subject, to, err)
		}
		copied = append(copied, acl.Subject)
	}
	return copied, nil
}
