package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

func TestRewriteAdminArgs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in, want []string
	}{
		{"electMaster -bn", []string{"admin", "electMaster", "-a", "c:1", "-b", "2", "-bn", "broker-a", "-c", "C"},
			[]string{"admin", "electMaster", "-a", "c:1", "-b", "2", "--brokerName", "broker-a", "-c", "C"}},
		{"-bn=value", []string{"admin", "cleanBrokerMetadata", "-bn=broker-a", "-l"},
			[]string{"admin", "cleanBrokerMetadata", "--brokerName=broker-a", "-l"}},
		{"global flags first", []string{"--log-level=debug", "admin", "-n", "ns:1", "electMaster", "-bn", "x"},
			[]string{"--log-level=debug", "admin", "-n", "ns:1", "electMaster", "--brokerName", "x"}},
		{"other command keeps -bn", []string{"admin", "topicList", "-bn"}, []string{"admin", "topicList", "-bn"}},
		{"not admin", []string{"broker", "-bn", "x"}, []string{"broker", "-bn", "x"}},
		{"after --", []string{"admin", "electMaster", "--", "-bn"}, []string{"admin", "electMaster", "--", "-bn"}},
		{"long and one-letter untouched", []string{"admin", "electMaster", "--bn", "-b", "1", "-bnx"},
			[]string{"admin", "electMaster", "--bn", "-b", "1", "-bnx"}},
		{"empty", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			got := rewriteAdminArgs(in)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("rewriteAdminArgs(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if !slices.Equal(in, tc.in) {
				t.Fatalf("the input was modified: %q", in)
			}
		})
	}
}

// TestFlagAliases: both spellings set the flag; help shows the new name.
func TestFlagAliases(t *testing.T) {
	for _, spelling := range []string{"--topic", "--topicName"} {
		var topic, ns string
		c := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		c.PersistentFlags().StringVarP(&ns, "namesrvAddr", "n", "", "")
		c.Flags().StringVarP(&topic, "topic", "t", "", "")
		flagAliases(c, "topic", "topicName")
		c.SetArgs([]string{spelling, "T1", "--namesrv", "ns:1"})
		if err := c.Execute(); err != nil {
			t.Fatal(err)
		}
		if topic != "T1" || ns != "ns:1" {
			t.Fatalf("%s: topic %q, namesrv %q", spelling, topic, ns)
		}
		if f := c.Flags().Lookup("topicName"); f == nil || f.Shorthand != "t" {
			t.Fatalf("flag not renamed: %+v", f)
		}
	}
}

func TestRepeatInterval(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
		err  bool
	}{
		{nil, 0, false},
		{[]string{"-i", "2"}, 2 * time.Second, false},
		{[]string{"-i", ""}, 3 * time.Second, false},
		{[]string{"-i", "0"}, 0, true},
		{[]string{"-i", "x"}, 0, true},
	} {
		c := &cobra.Command{Use: "x", Run: func(*cobra.Command, []string) {}}
		intervalFlag(c, 3)
		c.SetArgs(tc.args)
		if err := c.Execute(); err != nil {
			t.Fatal(err)
		}
		got, err := repeatInterval(c)
		if (err != nil) != tc.err || got != tc.want {
			t.Fatalf("%q: %v, %v; want %v (error %v)", tc.args, got, err, tc.want, tc.err)
		}
	}
}

// TestRepeat: the body runs again each period until the context ends,
// which is a normal end.
func TestRepeat(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := repeat(ctx, time.Millisecond, func() error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Fatalf("repeat: %d runs, %v", n, err)
	}
}

// TestMultiLetterShortHelp: electMaster's help shows mqadmin's -bn.
func TestMultiLetterShortHelp(t *testing.T) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"admin", "electMaster", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), " -bn, --brokerName string") {
		t.Fatalf("help:\n%s", out.String())
	}
}
