package auth

import (
	"testing"

	"github.com/apogeemq/apogee/internal/protocol"
)

// TestStatefulAuthentication: with authenticationStrategy=Stateful a
// connection that proved a user skips the HMAC for that user's next
// requests; another connection, another user, or any user/ACL change
// verifies again; the default (Stateless) verifies every request.
func TestStatefulAuthentication(t *testing.T) {
	s := userStore(t)
	req := func(secret string) *protocol.Command {
		r := protocol.NewRequest(protocol.SendMessageV2, map[string]string{"b": "orders"}, []byte("x"))
		SignRemoting(r, "alice", secret, "")
		return r
	}
	for _, tc := range []struct {
		strategy     string
		trustedAfter bool // a wrongly signed request after a good one on the same conn passes
	}{
		{"", false},
		{"org.apache.rocketmq.auth.authentication.strategy.StatelessAuthenticationStrategy", false},
		{"Stateful", true},
		{"org.apache.rocketmq.auth.authentication.strategy.StatefulAuthenticationStrategy", true},
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			g, err := NewGuard(AuthConfig{AuthenticationEnabled: true, AuthenticationStrategy: tc.strategy}, s, SystemRules{})
			if err != nil {
				t.Fatal(err)
			}
			conn, other := new(int), new(int)
			if _, err := g.CheckRemotingConn(req("alice-secret"), local, conn); err != nil {
				t.Fatal(err)
			}
			_, err = g.CheckRemotingConn(req("wrong"), local, conn)
			if (err == nil) != tc.trustedAfter {
				t.Fatalf("wrong signature on a proven connection: %v", err)
			}
			if _, err := g.CheckRemotingConn(req("wrong"), local, other); err == nil {
				t.Fatal("wrong signature on a fresh connection accepted")
			}
			if err := s.UpdateUser("alice", UserUpdate{Password: "alice-secret"}); err != nil { // bumps the version
				t.Fatal(err)
			}
			if _, err := g.CheckRemotingConn(req("wrong"), local, conn); err == nil {
				t.Fatal("wrong signature accepted after a user change")
			}
			g.ForgetConn(conn)
		})
	}
	if _, err := NewGuard(AuthConfig{AuthenticationStrategy: "Sometimes"}, s, SystemRules{}); err == nil {
		t.Fatal("bad authenticationStrategy accepted")
	}
}
