package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/config"
	"github.com/apogeemq/apogee/internal/controller"
	"github.com/apogeemq/apogee/internal/namesrv"
)

func init() { register(newCheckCmd) }

// checkReport is what `apogee check` found in one config file.
type checkReport struct {
	// keys is how many keys the file sets.
	keys int
	// unknown lists the keys no part of the role's config knows (the
	// server would warn and ignore them), in file order.
	unknown []string
	// bad holds one error per key whose value does not parse, then the
	// role's Validate error (every rule it breaks, each naming its key).
	bad []error
}

// checkConfigFile loads path as the config file of role (namesrv, broker
// or controller) with the keys and the Validate the servers use, one key at
// a time so that every bad value is reported, not only the first.
func checkConfigFile(role, path string) (checkReport, error) {
	props, err := config.LoadFile(path)
	if err != nil {
		return checkReport{}, err
	}
	var (
		setKey   func(k, v string) (bool, error)
		validate func() error
	)
	switch role {
	case "broker":
		cfg := broker.DefaultConfig()
		setKey, validate = cfg.SetKey, cfg.Validate
	case "namesrv":
		cfg := namesrv.DefaultConfig()
		// namesrv.conf may carry the embedded controller's keys
		// (enableControllerInNamesrv, namesrv_controller.go).
		var ctl controllerInNamesrv
		ctl.Config = controller.DefaultConfig()
		setKey = func(k, v string) (bool, error) {
			known, err := config.SetKey(&cfg, k, v)
			if known || err != nil {
				return known, err
			}
			return config.SetKey(&ctl, k, v)
		}
		validate = func() error {
			err := cfg.Validate()
			if ctl.EnableControllerInNamesrv {
				err = errors.Join(err, ctl.Config.Validate())
			}
			return err
		}
	case "controller":
		cfg := controller.DefaultConfig()
		setKey = func(k, v string) (bool, error) { return config.SetKey(&cfg, k, v) }
		validate = cfg.Validate
	default:
		return checkReport{}, fmt.Errorf("check: unknown --role %q: want namesrv, broker or controller", role)
	}
	r := checkReport{keys: props.Len()}
	for _, k := range props.Keys() {
		v, _ := props.Get(k)
		known, err := setKey(k, v)
		switch {
		case err != nil:
			r.bad = append(r.bad, err)
		case !known:
			r.unknown = append(r.unknown, k)
		}
	}
	if len(r.bad) == 0 {
		// Validate only a config whose values all parsed: a key left at
		// its default would otherwise be blamed for the bad one.
		if err := validate(); err != nil {
			r.bad = append(r.bad, err)
		}
	}
	return r, nil
}

// roleFromFileName guesses the role from a file name such as broker-a.conf
// or namesrv.conf ("" when it cannot tell).
func roleFromFileName(path string) string {
	base := strings.ToLower(filepath.Base(path))
	for _, role := range []string{"namesrv", "controller", "broker"} {
		if strings.Contains(base, role) {
			return role
		}
	}
	return ""
}

func newCheckCmd(*globalFlags) *cobra.Command {
	var path, role string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check a config file (unknown keys warned, bad values fail) without starting a server",
		Long: "check loads a namesrv.conf, broker.conf or controller.conf with the same keys and checks\n" +
			"the server uses, then exits: 0 when the file would start (unknown keys are listed as\n" +
			"warnings, as the server logs them), 1 when a value does not parse or breaks a rule.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return errors.New("check: give the file with -c")
			}
			if role == "" {
				role = roleFromFileName(path)
			}
			if role == "" {
				return fmt.Errorf("check: cannot tell the role of %s from its name: give --role namesrv|broker|controller", path)
			}
			r, err := checkConfigFile(role, path)
			if err != nil {
				return err
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			for _, k := range r.unknown {
				fmt.Fprintf(errOut, "warning: %s: unknown %s.conf key %q (ignored)\n", path, role, k)
			}
			for _, e := range r.bad {
				for _, line := range strings.Split(e.Error(), "\n") {
					fmt.Fprintf(errOut, "error: %s: %s\n", path, line)
				}
			}
			if len(r.bad) > 0 {
				return fmt.Errorf("check: %s is not a valid %s.conf", path, role)
			}
			fmt.Fprintf(out, "%s: valid %s.conf (%d keys, %d unknown)\n", path, role, r.keys, len(r.unknown))
			return nil
		},
	}
	cmd.Flags().StringVarP(&path, "config", "c", "", "the config file to check")
	cmd.Flags().StringVar(&role, "role", "", "namesrv, broker or controller (default: from the file name)")
	return cmd
}
