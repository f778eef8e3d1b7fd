package auth

import (
	"os"
	"path/filepath"
	"testing"
)

const plainACL = `globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      # the group can't subscribe
      - groupA=DENY
      - groupB=PUB|SUB
  - accessKey: rocketmq2
    secretKey: "12345678"
    admin: true
    topicPerms: [t1=PUB, t2=SUB]
`

func TestMigrateV1(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plain_acl.yml")
	if err := os.WriteFile(path, []byte(plainACL), 0o644); err != nil {
		t.Fatal(err)
	}
	s := mustStore(t, dir)
	n, err := MigrateV1(path, s)
	if err != nil || n != 2 {
		t.Fatalf("migrated %d, %v", n, err)
	}
	if !s.IsSuper("rocketmq2") || s.IsSuper("RocketMQ") {
		t.Fatal("admin flag not mapped to Super")
	}
	cases := []struct {
		check Check
		ok    bool
	}{
		{Check{Topic("topicB"), actPub}, true},
		{Check{Topic("topicC"), actPub}, false},
		{Check{Topic("topicA"), actSub}, false},
		{Check{Topic("other"), actPub}, false}, // defaultTopicPerm DENY
		{Check{Group("groupB"), actSub}, true},
		{Check{Group("groupA"), actSub}, false},
		{Check{Group("anyGroup"), actSub}, true}, // defaultGroupPerm SUB
	}
	for _, tc := range cases {
		if err := s.Authorize("RocketMQ", []Check{tc.check}, local, SystemRules{}); (err == nil) != tc.ok {
			t.Errorf("%v: %v, want allowed=%v", tc.check.Resource, err, tc.ok)
		}
	}
	// Once only: a second run creates nothing.
	if n, err := MigrateV1(path, s); err != nil || n != 0 {
		t.Fatalf("second migration: %d, %v", n, err)
	}
}

func FuzzParsePlainACL(f *testing.F) {
	f.Add([]byte(plainACL))
	f.Add([]byte("accounts:\n- accessKey: a\n  topicPerms:\n  - x=PUB\n"))
	f.Add([]byte("accounts:\n  -\n    - y\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParsePlainACL(data)
	})
}
