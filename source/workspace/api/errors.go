package api

import (
	"errors"
	"fmt"
	"time"
)

// ErrNotFound is a 404: an unknown or deleted thread, or one whose usage is
// past the API's 90-day window (Amp's answer may not tell them apart).
var ErrNotFound = errors.New("not found")

// ScopeError is a 403: the token lacks the scope the endpoint needs.
type ScopeError struct {
	Endpoint string
	// Scope is the scope the endpoint needs.
	Scope string
}

func (e *ScopeError) Error() string {
	return fmt.Sprintf("%s: 403 forbidden: the application lacks the scope %s", e.Endpoint, e.Scope)
}

// StatusError is any other answer that is not 200 (after the retries).
type StatusError struct {
	Endpoint string
	Status   int
	// Message is the error body's "error", bounded and scrubbed.
	Message string
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%s: HTTP %d", e.Endpoint, e.Status)
	}
	return fmt.Sprintf("%s: HTTP %d: %s", e.Endpoint, e.Status, e.Message)
}

// TokenError is a token request that did not give a token.
type TokenError struct {
	Status int // 0 when no answer came
	// Code is OAuth's error code (invalid_client, invalid_scope, …) when
	// the body has one; Description its error_description, scrubbed.
	Code, Description string
	Err               error // a network error

	// transient: worth asking again (a network error, 429, 5xx), after
	// retryAfter when the answer said so.
	transient     bool
	retryAfter    time.Duration
	hasRetryAfter bool
}

func (e *TokenError) Error() string {
	switch {
	case e.Err != nil:
		return "token: " + e.Err.Error()
	case e.Code != "" && e.Description != "":
		return fmt.Sprintf("token: HTTP %d: %s: %s", e.Status, e.Code, e.Description)
	case e.Code != "":
		return fmt.Sprintf("token: HTTP %d: %s", e.Status, e.Code)
	case e.Description != "":
		return fmt.Sprintf("token: HTTP %d: %s", e.Status, e.Description)
	}
	return fmt.Sprintf("token: HTTP %d", e.Status)
}

func (e *TokenError) Unwrap() error { return e.Err }

// AnswerError is a 200 answer that cannot be used: too large, not JSON,
// or without a field the exporter needs.
type AnswerError struct {
	Endpoint string
	// Field is the field at fault ("" for the whole answer).
	Field string
	// Reason: too_large, undecodable, missing_field, type_mismatch.
	Reason string
	Detail string
}

func (e *AnswerError) Error() string {
	s := e.Endpoint + ": " + e.Reason
	if e.Field != "" {
		s += " " + e.Field
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Reasons of an AnswerError besides the anomaly reasons.
const (
	ReasonTooLarge    = "too_large"
	ReasonUndecodable = "undecodable"
)
