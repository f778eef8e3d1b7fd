package protocol

import (
	"errors"
	"testing"
)

func TestExtHelpers(t *testing.T) {
	c := NewRequest(PullMessage, nil, nil)
	c.SetExt("queueId", "7")
	c.SetExt("offset", "-9000000000")
	c.SetExt("bad", "x1")
	c.SetExt("yes", "TrUe")
	c.SetExt("no", "yes")
	if c.Ext("queueId") != "7" || c.Ext("missing") != "" {
		t.Fatal("Ext")
	}
	if n, err := c.ExtInt32("queueId"); err != nil || n != 7 {
		t.Fatalf("ExtInt32: %d %v", n, err)
	}
	if n, err := c.ExtInt64("offset"); err != nil || n != -9000000000 {
		t.Fatalf("ExtInt64: %d %v", n, err)
	}
	if _, err := c.ExtInt32("offset"); err == nil {
		t.Fatal("int32 overflow accepted")
	}
	for _, key := range []string{"bad", "missing"} {
		_, err := c.ExtInt64(key)
		var pe *Error
		if !errors.As(err, &pe) || pe.Code != SystemError || !contains(pe.Remark, "<"+key+">") {
			t.Fatalf("%s: %v", key, err)
		}
	}
	if !c.ExtBool("yes") || c.ExtBool("no") || c.ExtBool("missing") {
		t.Fatal("ExtBool must follow Boolean.parseBoolean")
	}
}

func contains(s, sub string) bool { return len(sub) == 0 || indexOf(s, sub) >= 0 }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestNewResponse(t *testing.T) {
	req := NewRequest(HeartBeat, nil, nil)
	req.Opaque = 77
	req.SerializeType = SerializeRocketMQ
	resp := NewResponse(req, SystemError, "boom")
	if resp.Opaque != 77 || resp.SerializeType != SerializeRocketMQ || !resp.IsResponse() || resp.IsOneway() ||
		resp.Code != 1 || resp.Remark != "boom" || resp.Version != CurrentVersion {
		t.Fatalf("%+v", resp)
	}
	if req.IsResponse() || req.Language != LanguageGo {
		t.Fatalf("%+v", req)
	}
}

func TestCodeNames(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{SendMessage.String(), "SEND_MESSAGE"},
		{GetRouteInfoByTopic.String(), "GET_ROUTEINFO_BY_TOPIC"},
		{SendBatchMessage.String(), "SEND_BATCH_MESSAGE"},
		{PopMessage.String(), "POP_MESSAGE"},
		{RequestCode(9999).String(), "RequestCode(9999)"},
		{SystemBusy.String(), "SYSTEM_BUSY"},
		{SubscriptionGroupNotExist.String(), "SUBSCRIPTION_GROUP_NOT_EXIST"},
		{ResponseCode(77).String(), "ResponseCode(77)"},
		{LanguageGo.String(), "GO"},
		{LanguageNodeJS.String(), "NODE_JS"},
		{LanguageCode(99).String(), "LanguageCode(99)"},
		{SerializeRocketMQ.String(), "ROCKETMQ"},
		{(&Error{Code: TopicNotExist, Remark: "x"}).Error(), "CODE: 17, DESC: x"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q want %q", tc.got, tc.want)
		}
	}
	if !SystemBusy.Retriable() || MessageIllegal.Retriable() {
		t.Error("Retriable")
	}
	if l, ok := ParseLanguage("JAVA"); !ok || l != LanguageJava {
		t.Error("ParseLanguage")
	}
}
