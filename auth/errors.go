package auth

import "errors"

// Sentinel errors. Errors returned by this package wrap one of these, so
// callers test with errors.Is. No error of this package ever contains a token
// (see [FileError] for what a parse error may quote).
var (
	// ErrBadFile: a tokens file that does not parse. The error is a
	// *FileError naming each bad line.
	ErrBadFile = errors.New("auth: bad tokens file")
	// ErrNoTokens: a tokens file that parses but holds no token. Refused
	// rather than taken as "refuse everyone": an empty file is far more
	// often a truncated copy than an intent.
	ErrNoTokens = errors.New("auth: tokens file holds no token")
	// ErrTooLarge: a tokens file over MaxFileSize bytes.
	ErrTooLarge = errors.New("auth: tokens file too large")
	// ErrFileMode: a tokens file that others than its owner may read or
	// write. CheckFileMode returns it as a warning; nothing refuses it.
	ErrFileMode = errors.New("auth: tokens file readable or writable by others")

	// ErrNoToken: the request carries no bearer token: no Authorization
	// header, or one of another scheme (Basic, …). Answer 401.
	ErrNoToken = errors.New("auth: no bearer token")
	// ErrMalformed: an Authorization: Bearer header whose token is empty,
	// longer than MaxTokenLen or not RFC 6750 token syntax. Answer 401.
	ErrMalformed = errors.New("auth: malformed bearer token")
	// ErrUnknownToken: a well-formed bearer token that is not in the set.
	// Answer 401.
	ErrUnknownToken = errors.New("auth: unknown bearer token")
)
