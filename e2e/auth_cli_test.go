package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/auth"
	"github.com/apogeemq/apogee/internal/testutil/cluster"
)

// TestAuthAdminCLI: `apogee admin` manages users and ACLs with mqadmin's
// commands and flags, signing every request with --ak/--sk; a refusal
// exits non-zero with the broker's reason; listUser/getAcl print one entry
// per line (and --json); getUser never shows a password; changes reach a
// producer's open connection at once.
func TestAuthAdminCLI(t *testing.T) {
	c := startAuthCluster(t, nil)
	c.createTopic("orders", 4)
	bin := buildApogee(t)
	cluster := c.cfg.BrokerClusterName
	base := []string{"-n", c.nsAddr, "--ak", superUser, "--sk", superPass}
	run := func(args ...string) string {
		t.Helper()
		out, errOut, code := runApogee(t, bin, append(append([]string{"admin"}, args...), base...)...)
		if code != 0 {
			t.Fatalf("apogee admin %v: exit %d: %s", args, code, errOut)
		}
		return out
	}

	// Unsigned, and signed with a wrong secret: refused, non-zero exit.
	_, errOut, code := runApogee(t, bin, "admin", "listUser", "-c", cluster, "-n", c.nsAddr)
	if code == 0 || !strings.Contains(errOut, "username cannot be null.") {
		t.Fatalf("unsigned listUser: exit %d: %s", code, errOut)
	}
	_, errOut, code = runApogee(t, bin, "admin", "createUser", "-c", cluster, "-u", "x", "-p", "y", "-n", c.nsAddr, "--ak", superUser, "--sk", "wrong")
	if code == 0 || !strings.Contains(errOut, "check signature failed.") {
		t.Fatalf("wrong-secret createUser: exit %d: %s", code, errOut)
	}
	if _, ok := c.b.Auth().User("x"); ok {
		t.Fatal("refused createUser created the user")
	}

	run("createUser", "-c", cluster, "-u", "alice", "-p", "alice-secret", "-t", "Normal")
	out := run("getUser", "-c", cluster, "-u", "alice")
	if !strings.Contains(out, "alice") || !strings.Contains(out, "Normal") || strings.Contains(out, "alice-secret") {
		t.Fatalf("getUser: %q", out)
	}
	out = run("getUser", "-c", cluster, "-u", "alice", "--json")
	if strings.Contains(out, "alice-secret") || strings.Contains(out, "password") {
		t.Fatalf("getUser --json shows the password: %s", out)
	}
	out = run("listUser", "-c", cluster)
	if !strings.Contains(out, "alice") || !strings.Contains(out, superUser) {
		t.Fatalf("listUser: %q", out)
	}

	// The SDK signs with client.WithCredentials.
	sdk, err := client.NewProducer(uniqueName(t, "pg"), client.WithNameServers(c.nsAddr), client.WithCredentials("alice", "alice-secret"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sdk.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sdk.Close() })
	sdkSend := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := sdk.Send(ctx, client.NewMessage("orders", []byte("sdk")))
		return err
	}
	wantRefused(t, sdkSend(), "User:alice has no permission to access Topic:orders")

	run("createAcl", "-c", cluster, "-s", "User:alice", "-r", "Topic:orders,Group:g1", "-a", "Pub,Sub", "-d", "Allow")
	if err := sdkSend(); err != nil {
		t.Fatalf("SDK send after createAcl: %v", err)
	}
	// apogee produce signs with --ak/--sk too.
	if _, errOut, code := runApogee(t, bin, "produce", "-n", c.nsAddr, "-t", "orders", "--body", "cli", "--ak", "alice", "--sk", "alice-secret"); code != 0 {
		t.Fatalf("apogee produce --ak alice: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runApogee(t, bin, "produce", "-n", c.nsAddr, "-t", "orders", "--body", "cli"); code == 0 || !strings.Contains(errOut, "username cannot be null.") {
		t.Fatalf("unsigned apogee produce: exit %d: %s", code, errOut)
	}
	official := newProducer(t, c.nsAddr, producer.WithCredentials(creds("alice", "alice-secret")))
	if err := sendOne(official, "orders"); err != nil {
		t.Fatalf("official send after createAcl: %v", err)
	}
	out = run("getAcl", "-c", cluster, "-s", "User:alice")
	t.Logf("getAcl:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(out, "Topic:orders") || !strings.Contains(out, "Group:g1") || !strings.Contains(lines[1], "Allow") {
		t.Fatalf("getAcl: want a header and one line per entry: %q", out)
	}

	// updateAcl replaces the matching resource's actions and decision.
	run("updateAcl", "-c", cluster, "-s", "User:alice", "-r", "Topic:orders", "-a", "Pub", "-d", "Deny")
	wantRefused(t, sdkSend(), "the decision is deny.")
	wantRefused(t, sendOne(official, "orders"), "the decision is deny.")
	var rows []struct {
		Subject, Resource, Decision string
		Actions                     []string
	}
	if err := json.Unmarshal([]byte(run("listAcl", "-c", cluster, "--json")), &rows); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rows {
		if r.Subject == "User:alice" && r.Resource == "Topic:orders" {
			found = r.Decision == "Deny" && len(r.Actions) == 1 && r.Actions[0] == "Pub"
		}
	}
	if !found {
		t.Fatalf("listAcl --json after updateAcl: %+v", rows)
	}

	// A normal user may not administer.
	_, errOut, code = runApogee(t, bin, "admin", "createUser", "-c", cluster, "-u", "eve", "-p", "e", "-n", c.nsAddr, "--ak", "alice", "--sk", "alice-secret")
	if code == 0 || !strings.Contains(errOut, "Cluster:"+cluster) {
		t.Fatalf("normal user createUser: exit %d: %s", code, errOut)
	}

	run("deleteAcl", "-c", cluster, "-s", "User:alice", "-r", "Topic:orders")
	wantRefused(t, sdkSend(), "no matched policies.")
	run("deleteUser", "-c", cluster, "-u", "alice")
	wantRefused(t, sdkSend(), "User:alice is not found.")
	if _, errOut, code := runApogee(t, bin, append([]string{"admin", "getUser", "-c", cluster, "-u", "alice"}, base...)...); code == 0 {
		t.Fatalf("getUser of a deleted user exits 0: %s", errOut)
	}
}

// TestAuthCopyCLI copies users (with their passwords) and ACLs from one
// broker to another with mqadmin's copyUser and copyAcl, then signs a send
// to the second broker as the copied user.
func TestAuthCopyCLI(t *testing.T) {
	c := startAuthCluster(t, nil)
	bcfg := brokerTestConfig(t.TempDir())
	bcfg.BrokerName = "broker-b"
	bcfg.NamesrvAddr = []string{c.nsAddr}
	bcfg.AuthenticationEnabled, bcfg.AuthorizationEnabled = true, true
	bcfg.InitAuthenticationUser = c.cfg.InitAuthenticationUser
	bcfg.InnerClientAuthenticationCredentials = c.cfg.InnerClientAuthenticationCredentials
	b2 := haBroker(t, bcfg)
	from, to := c.b.Addr(), b2.Addr()
	bin := buildApogee(t)
	admin := func(ak, sk string, args ...string) (string, string, int) {
		return runApogee(t, bin, append(append([]string{"admin"}, args...), "-n", c.nsAddr, "--ak", ak, "--sk", sk)...)
	}
	must := func(ak, sk string, args ...string) string {
		t.Helper()
		out, errOut, code := admin(ak, sk, args...)
		if code != 0 {
			t.Fatalf("apogee admin %v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	must(superUser, superPass, "createUser", "-b", from, "-u", "alice", "-p", "alice-secret", "-t", "Normal")
	must(superUser, superPass, "createUser", "-b", from, "-u", "bob", "-p", "bob-secret", "-t", "Normal")
	must(superUser, superPass, "createAcl", "-b", from, "-s", "User:alice", "-r", "Topic:orders", "-a", "Pub", "-d", "Allow")
	must(superUser, superPass, "createAcl", "-b", from, "-s", "User:alice", "-r", "Topic:audit", "-a", "Pub,Sub", "-d", "Deny")

	// A Super user that is not the inner-client user cannot read passwords.
	if _, errOut, code := admin(superUser, superPass, "copyUser", "-f", from, "-t", to, "-u", "alice"); code == 0 || !strings.Contains(errOut, "inner-client") {
		t.Fatalf("copyUser signed as %s: exit %d: %s", superUser, code, errOut)
	}
	if _, ok := b2.Auth().User("alice"); ok {
		t.Fatal("a refused copyUser created the user")
	}
	out := must("inner", "inner-secret", "copyUser", "-f", from, "-t", to, "-u", "alice")
	if !strings.Contains(out, "copied 1 users") {
		t.Fatalf("copyUser: %q", out)
	}
	if _, ok := b2.Auth().User("bob"); ok {
		t.Fatal("copyUser -u alice copied bob too")
	}
	out = must(superUser, superPass, "copyAcl", "-f", from, "-t", to, "-s", "User:alice")
	if !strings.Contains(out, "copied 1 ACLs") {
		t.Fatalf("copyAcl: %q", out)
	}
	copiedACL, ok, err := b2.Auth().GetACL("User:alice")
	if err != nil || !ok {
		t.Fatalf("ACL of alice on the target: %v %v", ok, err)
	}
	entries := map[string]string{}
	for _, e := range auth.ACLToInfo(copiedACL).Policies[0].Entries {
		entries[e.Resource] = strings.Join(e.Actions, ",") + " " + e.Decision
	}
	if entries["Topic:orders"] != "Pub Allow" || entries["Topic:audit"] != "Pub,Sub Deny" {
		t.Fatalf("ACL of alice on the target: %v", entries)
	}

	// The copied password signs: alice may publish to orders on broker-b.
	(&cluster.Cluster{T: t, Logger: testLogger(t), NS: c.ns, NSAddr: c.nsAddr, Cfg: bcfg, B: b2}).CreateTopic("orders", 2)
	sdk, err := client.NewProducer(uniqueName(t, "pg"), client.WithNameServers(c.nsAddr), client.WithCredentials("alice", "alice-secret"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sdk.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sdk.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := sdk.Send(ctx, client.NewMessage("orders", []byte("copied"))); err != nil {
		t.Fatalf("send to %s signed as the copied alice: %v", to, err)
	}

	// Everything, without a list.
	out = must("inner", "inner-secret", "copyUser", "-f", from, "-t", to)
	if _, ok := b2.Auth().User("bob"); !ok || !strings.Contains(out, "bob") {
		t.Fatalf("copyUser of every user: %q", out)
	}
}
