package auth

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
)

func mustStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func entry(t *testing.T, res, actions, decision string, ips ...string) EntryInfo {
	t.Helper()
	return EntryInfo{Resource: res, Actions: strings.Split(actions, ","), Decision: decision, SourceIPs: ips}
}

func putACL(t *testing.T, s *Store, subject string, entries ...EntryInfo) {
	t.Helper()
	a, err := ACLInfo{Subject: subject, Policies: []PolicyInfo{{Entries: entries}}}.ACL()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutACL(a); err != nil {
		t.Fatal(err)
	}
}

var local = netip.MustParseAddr("127.0.0.1")

// TestEvaluation: RocketMQ 5.3 semantics (AclAuthorizationHandler): the most
// specific matching resource wins, Deny wins at equal specificity, Super
// passes, no match is a refusal.
func TestEvaluation(t *testing.T) {
	rules := SystemRules{TraceTopic: "RMQ_SYS_TRACE_TOPIC", Cluster: "DefaultCluster"}
	cases := []struct {
		name    string
		entries []EntryInfo
		check   Check
		ip      netip.Addr
		want    string // "" = allowed, else a substring of the refusal
	}{
		{"literal allow", []EntryInfo{entry(t, "Topic:orders", "Pub", "Allow")}, Check{Topic("orders"), actPub}, local, ""},
		{"other topic", []EntryInfo{entry(t, "Topic:orders", "Pub", "Allow")}, Check{Topic("other"), actPub}, local, "no matched policies."},
		{"wrong action", []EntryInfo{entry(t, "Topic:orders", "Pub", "Allow")}, Check{Topic("orders"), actSub}, local, "no matched policies."},
		{"All covers Sub", []EntryInfo{entry(t, "Topic:orders", "All", "Allow")}, Check{Topic("orders"), actSub}, local, ""},
		{"explicit deny beats wildcard allow", []EntryInfo{
			entry(t, "Topic:*", "Pub", "Allow"), entry(t, "Topic:secret", "Pub", "Deny")},
			Check{Topic("secret"), actPub}, local, "the decision is deny."},
		{"literal allow beats prefixed deny", []EntryInfo{
			entry(t, "Topic:ord*", "Pub", "Deny"), entry(t, "Topic:orders", "Pub", "Allow")},
			Check{Topic("orders"), actPub}, local, ""},
		{"longer prefix wins", []EntryInfo{
			entry(t, "Topic:o*", "Pub", "Deny"), entry(t, "Topic:ord*", "Pub", "Allow")},
			Check{Topic("orders"), actPub}, local, ""},
		{"prefix beats type any", []EntryInfo{
			entry(t, "Topic:*", "Pub", "Deny"), entry(t, "Topic:ord*", "Pub", "Allow")},
			Check{Topic("orders"), actPub}, local, ""},
		{"type any beats any", []EntryInfo{
			entry(t, "*", "Pub", "Deny"), entry(t, "Topic:*", "Pub", "Allow")},
			Check{Topic("orders"), actPub}, local, ""},
		{"source ip inside", []EntryInfo{entry(t, "Topic:orders", "Pub", "Allow", "127.0.0.0/8")}, Check{Topic("orders"), actPub}, local, ""},
		{"source ip outside", []EntryInfo{entry(t, "Topic:orders", "Pub", "Allow", "10.0.0.1")}, Check{Topic("orders"), actPub}, local, "no matched policies."},
		{"group sub", []EntryInfo{entry(t, "Group:g1", "Sub", "Allow")}, Check{Group("g1"), actSub}, local, ""},
		{"trace topic by rule", nil, Check{Topic("RMQ_SYS_TRACE_TOPIC"), actPub}, local, ""},
		{"reply topic by rule", nil, Check{Topic("DefaultCluster_REPLY_TOPIC"), actPub}, local, ""},
		{"trace topic denied explicitly", []EntryInfo{entry(t, "Topic:RMQ_SYS_TRACE_TOPIC", "Pub", "Deny")},
			Check{Topic("RMQ_SYS_TRACE_TOPIC"), actPub}, local, "the decision is deny."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustStore(t, "")
			if err := s.CreateUser(User{Username: "alice", Password: "secret123"}); err != nil {
				t.Fatal(err)
			}
			if len(tc.entries) > 0 {
				putACL(t, s, "User:alice", tc.entries...)
			}
			// Order independence (apache/rocketmq#9540): every rotation of
			// the entries gives the same answer.
			for rot := 0; rot < max(1, len(tc.entries)); rot++ {
				s2 := mustStore(t, "")
				_ = s2.CreateUser(User{Username: "alice", Password: "x"})
				if len(tc.entries) > 0 {
					es := append(append([]EntryInfo{}, tc.entries[rot:]...), tc.entries[:rot]...)
					putACL(t, s2, "User:alice", es...)
				}
				err := s2.Authorize("alice", []Check{tc.check}, tc.ip, rules)
				if tc.want == "" && err != nil {
					t.Fatalf("rotation %d: refused: %v", rot, err)
				}
				if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
					t.Fatalf("rotation %d: got %v, want refusal with %q", rot, err, tc.want)
				}
			}
		})
	}
}

// TestDenyWinsRandomOrder shuffles many overlapping entries: the decision
// never depends on order.
func TestDenyWinsRandomOrder(t *testing.T) {
	base := []EntryInfo{
		entry(t, "*", "All", "Allow"), entry(t, "Topic:*", "Pub", "Allow"), entry(t, "Topic:a*", "Pub", "Allow"),
		entry(t, "Topic:ab*", "Pub", "Deny"), entry(t, "Topic:ac*", "Pub", "Allow"), entry(t, "Topic:abc", "Pub", "Allow"),
	}
	want := map[string]bool{"abc": true, "abd": false, "acx": true, "b": true, "aa": true}
	for i := 0; i < 50; i++ {
		es := append([]EntryInfo{}, base...)
		rand.Shuffle(len(es), func(a, b int) { es[a], es[b] = es[b], es[a] })
		s := mustStore(t, "")
		_ = s.CreateUser(User{Username: "u", Password: "p"})
		putACL(t, s, "User:u", es...)
		for topic, ok := range want {
			err := s.Authorize("u", []Check{{Topic(topic), actPub}}, local, SystemRules{})
			if (err == nil) != ok {
				t.Fatalf("topic %s order %v: err=%v want allowed=%v", topic, es, err, ok)
			}
		}
	}
}

// TestEqualSpecificityDenyWins: two entries of one resource (a file
// written by hand, or Custom and Default mixed) with opposite decisions:
// Deny wins whatever their order.
func TestEqualSpecificityDenyWins(t *testing.T) {
	allow := Entry{Resource: Resource{Type: ResourceTopic, Name: "ord", Pattern: PatternPrefixed}, Actions: []Action{ActionPub, ActionSub}, Decision: Allow}
	deny := Entry{Resource: Resource{Type: ResourceTopic, Name: "ord", Pattern: PatternPrefixed}, Actions: []Action{ActionSub}, Decision: Deny}
	for _, es := range [][]Entry{{allow, deny}, {deny, allow}} {
		acl := &ACL{Policies: []Policy{{Entries: es}}}
		if e := bestEntry(acl, PolicyCustom, Check{Topic("orders"), []Action{ActionPub, ActionSub}}, local); e == nil || e.Decision != Deny {
			t.Fatalf("order %v: best %+v", es, e)
		}
	}
}

func TestSuperAndDisabled(t *testing.T) {
	s := mustStore(t, "")
	if err := s.CreateUser(User{Username: "root", Password: "p", Type: UserSuper}); err != nil {
		t.Fatal(err)
	}
	if err := s.Authorize("root", []Check{{Topic("any"), actPub}}, local, SystemRules{}); err != nil {
		t.Fatalf("super refused: %v", err)
	}
	st := StatusDisable
	if err := s.UpdateUser("root", UserUpdate{Status: &st}); err != nil {
		t.Fatal(err)
	}
	if err := s.Authorize("root", []Check{{Topic("any"), actPub}}, local, SystemRules{}); err == nil || err.Error() != "User:root is disabled." {
		t.Fatalf("disabled: %v", err)
	}
	if err := s.Authorize("ghost", []Check{{Topic("any"), actPub}}, local, SystemRules{}); err == nil || err.Error() != "User:ghost not found." {
		t.Fatalf("unknown: %v", err)
	}
}

// TestManagementSemantics: createAcl adds entries to an existing ACL;
// updateAcl replaces the matching resource's entry; policies may name
// resources that do not exist; errors carry RocketMQ's text.
func TestManagementSemantics(t *testing.T) {
	s := mustStore(t, t.TempDir())
	if err := s.CreateUser(User{Username: "alice", Password: "pw"}); err != nil {
		t.Fatal(err)
	}
	var ae *Error
	if err := s.CreateUser(User{Username: "alice", Password: "pw"}); !errors.As(err, &ae) || ae.Msg != "The user is existed" {
		t.Fatalf("duplicate user: %v", err)
	}
	if err := s.UpdateUser("bob", UserUpdate{Password: "x"}); err == nil || err.Error() != "The user is not exist" {
		t.Fatalf("update missing: %v", err)
	}
	putACL(t, s, "User:alice", entry(t, "Topic:orders", "Pub", "Allow"))
	putACL(t, s, "User:alice", entry(t, "Group:g1", "Sub", "Allow"))
	a, ok, err := s.GetACL("User:alice")
	if err != nil || !ok || len(a.Policies) != 1 || len(a.Policies[0].Entries) != 2 {
		t.Fatalf("after two creates: %+v ok=%v err=%v", a, ok, err)
	}
	putACL(t, s, "User:alice", entry(t, "Topic:orders", "Pub,Sub", "Deny"))
	a, _, _ = s.GetACL("User:alice")
	e := a.Policies[0].Entries[0]
	if len(a.Policies[0].Entries) != 2 || e.Decision != Deny || len(e.Actions) != 2 {
		t.Fatalf("update replaced wrongly: %+v", a)
	}
	if err := s.PutACL(ACL{Subject: "User:nobody", Policies: []Policy{{Entries: []Entry{{Resource: Topic("x"), Actions: actPub, Decision: Allow}}}}}); err == nil ||
		err.Error() != "The subject of User:nobody is not exist." {
		t.Fatalf("acl for missing user: %v", err)
	}
	r, _ := ParseResource("Topic:orders")
	if err := s.DeleteACL("User:alice", PolicyCustom, &r); err != nil {
		t.Fatal(err)
	}
	if got := s.ListACLs("", ""); len(got) != 1 || len(got[0].Policies[0].Entries) != 1 {
		t.Fatalf("after delete entry: %+v", got)
	}
	if got := s.ListACLs("", "Topic"); len(got) != 0 {
		t.Fatalf("resource filter: %+v", got)
	}
	// Survives a reopen.
	s2 := mustStore(t, filepathDir(s.Path()))
	if _, ok := s2.User("alice"); !ok {
		t.Fatal("user lost on reopen")
	}
	if got := s2.ListACLs("alice", ""); len(got) != 1 {
		t.Fatalf("acl lost on reopen: %+v", got)
	}
	if err := s2.DeleteUser("alice"); err != nil {
		t.Fatal(err)
	}
	if got := s2.ListACLs("", ""); len(got) != 0 {
		t.Fatalf("deleting the user keeps its acl: %+v", got)
	}
}

func filepathDir(p string) string { return p[:strings.LastIndex(p, "/")] }

func TestParseResource(t *testing.T) {
	cases := []struct {
		in, key string
		ok      bool
	}{
		{"*", "*", true}, {"Topic:orders", "Topic:orders", true}, {"topic:orders*", "Topic:orders*", true},
		{"Group:*", "Group:*", true}, {"Cluster:DefaultCluster", "Cluster:DefaultCluster", true},
		{"Topic:", "", false}, {"Foo:x", "", false}, {"orders", "", false},
	}
	for _, tc := range cases {
		r, err := ParseResource(tc.in)
		if (err == nil) != tc.ok || (tc.ok && r.Key() != tc.key) {
			t.Errorf("ParseResource(%q) = %v, %v", tc.in, r.Key(), err)
		}
	}
}
