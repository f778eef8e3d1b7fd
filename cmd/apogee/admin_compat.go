package main

// mqadmin command-line compatibility: scripts call `apogee admin` exactly
// as they call mqadmin, so the option names, letters and arities are
// mqadmin's. Two things pflag cannot express directly are handled here:
//
//   - multi-letter short options (mqadmin's `-bn brokerName`): rewritten to
//     their long form before cobra parses (rewriteAdminArgs);
//   - a second long name for one option (ours and mqadmin's): a pflag
//     normalize function maps the other spelling onto the flag's name.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// multiLetterShorts lists, per admin command, mqadmin's short options of
// more than one letter and the long option each stands for.
var multiLetterShorts = map[string]map[string]string{
	"electMaster":         {"bn": "brokerName"},
	"cleanBrokerMetadata": {"bn": "brokerName"},
}

// rewriteAdminArgs returns args (the process arguments without the program
// name) with mqadmin's multi-letter short options of an `admin <command>`
// line spelled as long options: `-bn X` becomes `--brokerName X` and
// `-bn=X` becomes `--brokerName=X`. Anything else, and everything after a
// bare "--", is left as it is; args is not modified.
func rewriteAdminArgs(args []string) []string {
	// The admin command, then its subcommand: the first argument after it
	// that names a command with multi-letter shorts (flag values before
	// the subcommand cannot be told from names without parsing).
	i := slices.Index(args, "admin")
	if i < 0 {
		return args
	}
	var table map[string]string
	for _, a := range args[i+1:] {
		if a == "--" {
			break
		}
		if table = multiLetterShorts[a]; table != nil {
			break
		}
	}
	if table == nil {
		return args
	}
	out := make([]string, len(args))
	copy(out, args)
	for j := i + 1; j < len(out); j++ {
		a := out[j]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "--") {
			continue
		}
		name, value, hasValue := strings.Cut(a[1:], "=")
		long, ok := table[name]
		if !ok {
			continue
		}
		out[j] = "--" + long
		if hasValue {
			out[j] += "=" + value
		}
	}
	return out
}

// showMultiLetterShorts makes c's help print mqadmin's multi-letter short
// options in front of the long names they stand for ("-bn, --brokerName"),
// which pflag cannot show itself.
func showMultiLetterShorts(c *cobra.Command) {
	table := multiLetterShorts[c.Name()]
	if table == nil {
		return
	}
	c.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		var b strings.Builder
		out := cmd.OutOrStdout()
		cmd.SetOut(&b)
		cmd.Parent().HelpFunc()(cmd, args)
		cmd.SetOut(out)
		text := b.String()
		for short, long := range table {
			text = strings.Replace(text, "      --"+long+" ", " -"+short+", --"+long+" ", 1)
		}
		fmt.Fprint(out, text)
	})
}

// adminGlobalAliases are other spellings of the flags every admin command
// has: mqadmin's -n is --namesrvAddr; --namesrv is Apogee's.
var adminGlobalAliases = map[string]string{"namesrv": "namesrvAddr"}

// flagAliases makes each old name in pairs (old, new, old, new, ...) a
// second spelling of the flag now called new. Flags registered under old
// are renamed (help shows the new name); both spellings parse.
func flagAliases(c *cobra.Command, pairs ...string) {
	m := make(map[string]string, len(adminGlobalAliases)+len(pairs)/2)
	for k, v := range adminGlobalAliases {
		m[k] = v
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	c.SetGlobalNormalizationFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if n, ok := m[name]; ok {
			return pflag.NormalizedName(n)
		}
		return pflag.NormalizedName(name)
	})
}

// repeatAnnotation marks the flag that makes a command repeat itself
// (mqadmin's -i interval in seconds).
const repeatAnnotation = "apogee-repeat-seconds"

// intervalFlag adds mqadmin's `-i interval`: with it the command runs again
// every interval seconds until interrupted; def is used when -i is given
// an empty value, as mqadmin does.
func intervalFlag(c *cobra.Command, def int) {
	c.Flags().StringP("interval", "i", "", fmt.Sprintf("repeat every this many seconds until interrupted (empty: %d)", def))
	c.Flags().SetAnnotation("interval", repeatAnnotation, []string{strconv.Itoa(def)})
}

// repeatInterval is the repeat period a command line asked for: zero when
// the command has no interval flag or it was not given.
func repeatInterval(c *cobra.Command) (time.Duration, error) {
	f := c.Flags().Lookup("interval")
	if f == nil || !f.Changed || f.Annotations[repeatAnnotation] == nil {
		return 0, nil
	}
	s := strings.TrimSpace(f.Value.String())
	if s == "" {
		s = f.Annotations[repeatAnnotation][0]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("-i %q: want a number of seconds > 0", s)
	}
	return time.Duration(n) * time.Second, nil
}

// repeat calls once, then again every period until ctx ends (SIGINT or
// SIGTERM): that end is the command's normal end, not an error.
func repeat(ctx context.Context, period time.Duration, once func() error) error {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if err := once(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
