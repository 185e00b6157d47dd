package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/joho/godotenv"

	"github.com/ksqlflow/flowtest/results"
	"github.com/ksqlflow/flowtest/runner"
	"github.com/ksqlflow/flowtest/safety"
)

// cmdCheck runs the preflight only and prints every check with PASS/FAIL. In sandbox mode
// the target checks need the emulator, so they are run only with --start-sandbox; in live
// mode the pending-request read (rule 9) is the only request sent.
func cmdCheck(args []string, stdout, stderr io.Writer) int {
	s, code := startCommand("check", args, false, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	static := s.staticReport()
	rep := static
	if static.OK() && s.in.Target == safety.TargetLive {
		reader, err := pendingReader(s.cfg)
		if err != nil {
			fmt.Fprintf(stderr, "flowtest check: %v\n", err)
			return runner.ExitRefused
		}
		r2, err := safety.Gate(context.Background(), s.in, safety.Plan{Pending: reader})
		if err != nil && !errors.Is(err, safety.ErrRefused) {
			fmt.Fprintf(stderr, "flowtest check: %v\n", err)
			return runner.ExitRefused
		}
		rep = r2
		rep.Checks = append(rep.Checks, s.needChecks()...)
	}
	safety.FormatReport(stdout, rep)
	if !rep.OK() {
		fmt.Fprintf(stdout, "preflight refused: %d of %d checks failed\n", len(rep.Violations()), len(rep.Checks))
		return runner.ExitRefused
	}
	fmt.Fprintf(stdout, "preflight passed: %d checks\n", len(rep.Checks))
	return runner.ExitPassed
}

// cmdVerify scans an archive for the current environment's secrets (in every encoding) and
// for raw app ids.
func cmdVerify(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("archive verify", flag.ContinueOnError)
	fset.SetOutput(stderr)
	envFile := fset.String("env-file", ".env", "dotenv file whose secrets are searched too (OS environment wins)")
	if err := fset.Parse(args); err != nil {
		return runner.ExitRefused
	}
	if fset.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: flowtest archive verify [--env-file F] <archive dir>")
		return runner.ExitRefused
	}
	env := envMap(os.Environ())
	if dot, err := readDotEnv(*envFile); err != nil {
		fmt.Fprintf(stderr, "flowtest archive verify: %v\n", err)
		return runner.ExitRefused
	} else {
		for k, v := range dot {
			if _, set := env[k]; !set {
				env[k] = v
			}
		}
	}
	var appIDs []string
	for _, a := range safety.AppCatalog() {
		if v := env[a.Name]; v != "" {
			appIDs = append(appIDs, v)
		}
	}
	return results.VerifyMain(fset.Arg(0), env, appIDs, stdout, stderr)
}

// readDotEnv reads a dotenv file; a missing file is empty.
func readDotEnv(path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return godotenv.Read(path)
}
