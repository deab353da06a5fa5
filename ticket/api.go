package ticket

import (
	"crypto/tls"

	"ticketd/ticket/internal/lease"
	"ticketd/ticket/internal/marks"
	"ticketd/ticket/internal/sequence"
	"ticketd/ticket/internal/spec"
	"ticketd/ticket/internal/tickets"
)

// The vocabulary every room of the package shares lives in internal/spec;
// these names are the package's API for it. Each is the same type, constant
// or sentinel as there: errors.Is and type switches see no difference.

type (
	// Config configures a Pair (and the administrative commands of
	// ticket/dba/...). The zero value of every field is the default
	// documented on it; DefaultConfig returns them filled in.
	Config = spec.Config
	// ServerConfig names one ticket server; its place in Config.Servers
	// fixes its auto_increment_offset.
	ServerConfig = spec.ServerConfig
	// TLSFiles names the PEM files of an encrypted link to the servers.
	TLSFiles = spec.TLSFiles
	// SequenceInfo is a named sequence as the DBA defined it.
	SequenceInfo = spec.SequenceInfo
	// Ticket is one raw ticket and the server that issued it.
	Ticket = tickets.Ticket
	// Run is values of a sequence one caller took alone, a stride apart
	// (NextRun).
	Run = spec.Run
	// Rewind is one counter a server is refused for (ServerHealth.Rewound).
	Rewind = marks.Rewind
	// AcquireRequest asks for a worker ID (AcquireWorker).
	AcquireRequest = lease.AcquireRequest
	// Lease is a worker ID held in the database.
	Lease = lease.Lease
	// SpreadRequest asks whether a lease should move to even out the
	// leases (SpreadWorker), and SpreadAdvice is the answer.
	SpreadRequest = lease.SpreadRequest
	SpreadAdvice  = lease.SpreadAdvice
	// SequenceProblem is a sequence the servers' catalogs disagree on, or
	// that was redefined since ticketd served it.
	SequenceProblem = sequence.Problem
	// SequenceStat is one named sequence as this Pair has used it.
	SequenceStat = sequence.Stat
	// KeyError is why a public sequence is refused for want of its key
	// (errors.Is(err, ErrNoKey); errors.As gives the check value wanted).
	KeyError = spec.KeyError
	// KeySource is the operator's keys as the Pair reads them
	// (Config.IDKeys): publicid.Store is one.
	KeySource = spec.KeySource
)

// The kinds of SequenceProblem (internal/sequence documents each).
const (
	ProblemRedefined   = sequence.ProblemRedefined
	ProblemDiffers     = sequence.ProblemDiffers
	ProblemSharedTable = sequence.ProblemSharedTable
	ProblemMissing     = sequence.ProblemMissing
	ProblemNoKey       = sequence.ProblemNoKey
	ProblemBelowStart  = sequence.ProblemBelowStart
)

// ProblemKinds lists every kind of SequenceProblem.
var ProblemKinds = sequence.ProblemKinds

// Bounds of lease requests (internal/lease documents each).
const (
	MinWorkerBits = lease.MinWorkerBits
	MaxWorkerBits = lease.MaxWorkerBits
	MinLeaseTTL   = lease.MinLeaseTTL
	MaxLeaseTTL   = lease.MaxLeaseTTL
	MaxReserveMs  = lease.MaxReserveMs
	// Bounds of SpreadRequest.Window.
	MinSpreadWindow = lease.MinSpreadWindow
	MaxSpreadWindow = lease.MaxSpreadWindow
)

// Defaults and bounds of Config (internal/spec documents each).
const (
	DefaultUser          = spec.DefaultUser
	DefaultDatabase      = spec.DefaultDatabase
	DefaultCallTimeout   = spec.DefaultCallTimeout
	DefaultProbeInterval = spec.DefaultProbeInterval
	DefaultMaxOpenConns  = spec.DefaultMaxOpenConns
	DefaultWarmConns     = spec.DefaultWarmConns
	MaxCallTimeoutFactor = spec.MaxCallTimeoutFactor
	ConnectTimeoutFactor = spec.ConnectTimeoutFactor
	DefaultFlushInterval = spec.DefaultFlushInterval
	DefaultCheckInterval = spec.DefaultCheckInterval
	DefaultMargin        = spec.DefaultMargin
	DefaultMargin32      = spec.DefaultMargin32
	MinCallTimeout       = spec.MinCallTimeout
	MaxCallTimeout       = spec.MaxCallTimeout
	MinProbeInterval     = spec.MinProbeInterval
	MaxProbeInterval     = spec.MaxProbeInterval
	MinOpenConns         = spec.MinOpenConns
	MaxOpenConnsLimit    = spec.MaxOpenConnsLimit
	MaxWarmConns         = spec.MaxWarmConns
	MinFlushInterval     = spec.MinFlushInterval
	MaxFlushInterval     = spec.MaxFlushInterval
	MinCheckInterval     = spec.MinCheckInterval
	MaxCheckInterval     = spec.MaxCheckInterval
	MinMargin            = spec.MinMargin
	MaxMargin            = spec.MaxMargin
	MaxServers           = spec.MaxServers
	MinTLSVersion        = spec.MinTLSVersion
	// The bounds of claims (Config.ClaimMaxValues, ClaimMaxShare).
	DefaultClaimMaxValues = spec.DefaultClaimMaxValues
	MaxClaimMaxValues     = spec.MaxClaimMaxValues
	DefaultClaimMaxShare  = spec.DefaultClaimMaxShare
	// MaxBlockSize is the largest block size of a sequence.
	MaxBlockSize = spec.MaxBlockSize
)

// Sentinel errors. Every error this package returns that a caller may want to
// act on wraps exactly one of these (test with errors.Is); internal/spec says
// what each means.
var (
	ErrInvalidConfig      = spec.ErrInvalidConfig
	ErrInvalidArgument    = spec.ErrInvalidArgument
	ErrNoServer           = spec.ErrNoServer
	ErrServerDown         = spec.ErrServerDown
	ErrMisconfigured      = spec.ErrMisconfigured
	ErrTLS                = spec.ErrTLS
	ErrNoDatabase         = spec.ErrNoDatabase
	ErrParity             = spec.ErrParity
	ErrBadName            = spec.ErrBadName
	ErrUnknownSequence    = spec.ErrUnknownSequence
	ErrSequenceExhausted  = spec.ErrSequenceExhausted
	ErrLeaseLost          = spec.ErrLeaseLost
	ErrAllWorkersHeld     = spec.ErrAllWorkersHeld
	ErrDeploymentMismatch = spec.ErrDeploymentMismatch
	ErrRewound            = spec.ErrRewound
	ErrUpgrade            = spec.ErrUpgrade
	ErrNoKey              = spec.ErrNoKey
	ErrClosed             = spec.ErrClosed
)

// Release is the release of this ticketd and its schema.sql (internal/spec
// says what the contract between releases is).
const Release = spec.Release

// HolderSuffix is what the name of a lease holder of this release ends with.
func HolderSuffix() string { return spec.HolderSuffix() }

// DefaultConfig returns the defaults filled in: the configuration of the
// local pair that `make db-up` starts, without a password.
func DefaultConfig() Config { return spec.DefaultConfig() }

// DefaultServers returns the local pair that `make db-up` starts.
func DefaultServers() []ServerConfig { return spec.DefaultServers() }

// LoadTLS reads f into a TLS configuration for Config.TLS (TLS 1.2 or later,
// the servers verified against f.CA and their names).
func LoadTLS(f TLSFiles) (*tls.Config, error) { return spec.LoadTLS(f) }

// CheckSequenceInfo reports why si is no sequence a catalog may hold (a bad
// name, width, block size or table), wrapping ErrInvalidArgument.
func CheckSequenceInfo(si SequenceInfo) error { return spec.CheckSequenceInfo(si) }
