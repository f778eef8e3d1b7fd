package names

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateTopic(t *testing.T) {
	tests := []struct {
		name  string
		topic string
		ok    bool
	}{
		{"plain", "TopicTest", true},
		{"all allowed characters", "a-Z_0|9%x", true},
		{"blank", "", false},
		{"space", "a b", false},
		{"dot", "a.b", false},
		{"slash", "a/b", false},
		{"non-ASCII", "tópico", false},
		{"127 characters", strings.Repeat("t", 127), true},
		{"128 characters", strings.Repeat("t", 128), false},
		{"retry topic of 255", RetryTopic(strings.Repeat("g", 255-len(RetryGroupTopicPrefix))), true},
		{"retry topic of 256", RetryTopic(strings.Repeat("g", 256-len(RetryGroupTopicPrefix))), false},
		{"DLQ topic of 255", DLQTopic(strings.Repeat("g", 255-len(DLQGroupTopicPrefix))), true},
		{"DLQ topic of 256", DLQTopic(strings.Repeat("g", 256-len(DLQGroupTopicPrefix))), false},
		{"POP v2 retry topic of a long group and topic",
			PopRetryTopicV2(strings.Repeat("g", MaxGroupLength), strings.Repeat("t", MaxTopicLength)), false},
		{"POP v1 retry topic", PopRetryTopicV1("g", "t"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateTopic(tc.topic)
			if (err == nil) != tc.ok {
				t.Fatalf("ValidateTopic(%q) = %v, want ok=%v", tc.topic, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
		})
	}
}

func TestValidateGroup(t *testing.T) {
	tests := []struct {
		name  string
		group string
		ok    bool
	}{
		{"plain", "please_rename_unique_group_name", true},
		{"blank", "", false},
		{"120 characters", strings.Repeat("g", 120), true},
		{"121 characters", strings.Repeat("g", 121), false},
		{"illegal character", "g#1", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateGroup(tc.group)
			if (err == nil) != tc.ok {
				t.Fatalf("ValidateGroup(%q) = %v, want ok=%v", tc.group, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
		})
	}
}

func TestReservedNames(t *testing.T) {
	tests := []struct {
		name            string
		topic           string
		system, noWrite bool
	}{
		{"auto-create template", TopicAutoCreate, true, false},
		{"schedule", TopicSchedule, true, true},
		{"half", TopicTransHalf, true, true},
		{"op half", TopicTransOpHalf, true, true},
		{"check max", TopicTransCheckMax, true, true},
		{"self test", TopicSelfTest, true, true},
		{"offset moved", TopicOffsetMoved, true, true},
		{"trace", TopicTrace, true, false},
		{"benchmark", TopicBenchmark, true, false},
		{"timer wheel", TopicTimerWheel, true, false},
		{"rmq_sys_ prefix", "rmq_sys_anything", true, false},
		{"user topic", "TopicTest", false, false},
		{"retry topic", RetryTopic("g"), false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsSystemTopic(tc.topic); got != tc.system {
				t.Errorf("IsSystemTopic(%q) = %v, want %v", tc.topic, got, tc.system)
			}
			if got := NotAllowedToSend(tc.topic); got != tc.noWrite {
				t.Errorf("NotAllowedToSend(%q) = %v, want %v", tc.topic, got, tc.noWrite)
			}
		})
	}
	for _, g := range []string{GroupToolsConsumer, GroupTransCheck, GroupReviveConsumer, SysGroupPrefix + "X"} {
		if !IsSystemGroup(g) {
			t.Errorf("IsSystemGroup(%q) = false", g)
		}
	}
	if IsSystemGroup("my_group") {
		t.Error("IsSystemGroup(my_group) = true")
	}
	if got := RetryTopic("g"); got != "%RETRY%g" || !IsRetryTopic(got) || IsDLQTopic(got) {
		t.Errorf("RetryTopic(g) = %q", got)
	}
	if got := DLQTopic("g"); got != "%DLQ%g" || !IsDLQTopic(got) || IsRetryTopic(got) {
		t.Errorf("DLQTopic(g) = %q", got)
	}
	if got := PopRetryTopicV2("g", "t"); got != "%RETRY%g+t" {
		t.Errorf("PopRetryTopicV2 = %q", got)
	}
	if got := PopRetryTopicV1("g", "t"); got != "%RETRY%g_t" {
		t.Errorf("PopRetryTopicV1 = %q", got)
	}
}
