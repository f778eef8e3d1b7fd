// Package config reads RocketMQ-style properties files (broker.conf,
// namesrv.conf) into typed component configs.
//
// It owns parsing, and writing run-time updates back to a file
// (PersistKeys, rewrite.go: other lines and comments stay): defaults live
// with each component's config struct,
// and validation is the component's Validate method. The loading order is
// always defaults -> properties file -> command-line flags.
//
// Properties syntax (the subset of java.util.Properties that RocketMQ
// operators write):
//
//	# comment            ! comment
//	key=value            key = value        key:value      key value
//	long\
//	   continued line    (a trailing backslash joins the next line, leading
//	                      blanks of the continuation dropped)
//
// Escapes \t \n \r \\ \= \: and \uXXXX are decoded in keys and values.
package config
