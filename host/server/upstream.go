package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/redact"
	"github.com/switchyard/switchyard/host/wasm"
)

// upstreamCall is one attempt in flight: the adapter version it started
// with (pinned until release) and the upstream response.
type upstreamCall struct {
	ep       *catalog.Endpoint
	mod      *wasm.Module
	release  func()
	resp     *http.Response
	cancel   context.CancelFunc
	timer    *time.Timer
	timedOut *atomic.Bool
	sentBody []byte // the transformed upstream body, for debug echo
	started  time.Time
}

// close ends the attempt: the upstream connection and the module pin.
func (u *upstreamCall) close() {
	if u.timer != nil {
		u.timer.Stop()
	}
	if u.resp != nil {
		_ = u.resp.Body.Close()
	}
	if u.cancel != nil {
		u.cancel()
	}
	if u.release != nil {
		u.release()
		u.release = nil
	}
}

// headersReceived stops the attempt timer: from here the request deadline
// bounds the call.
func (u *upstreamCall) headersReceived() { u.timer.Stop() }

// adapterCtx is the small JSON document every adapter hook gets first.
func adapterCtx(ep *catalog.Endpoint, stream bool, drop []string) []byte {
	b := make([]byte, 0, 96)
	b = append(b, `{"model":`...)
	b = strconv.AppendQuote(b, ep.UpstreamModel)
	b = append(b, `,"provider":`...)
	b = strconv.AppendQuote(b, ep.Provider.Slug)
	b = append(b, `,"stream":`...)
	b = strconv.AppendBool(b, stream)
	b = append(b, `,"drop":[`...)
	for i, d := range drop {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, d)
	}
	return append(b, "]}"...)
}

// send runs the adapter's request hook and calls the upstream. On success
// the caller owns the returned call and must close it.
func (s *Server) send(ctx context.Context, ep *catalog.Endpoint, hook abi.Hook, body []byte, stream bool, drop []string) (*upstreamCall, *apierr.Error) {
	mod, release := s.Modules.Acquire(ep.Provider.Adapter)
	if mod == nil {
		return nil, &apierr.Error{Status: http.StatusBadGateway, Retryable: true,
			Message: fmt.Sprintf("provider %s: its adapter module %q is not loaded", ep.Provider.Slug, ep.Provider.Adapter)}
	}
	u := &upstreamCall{ep: ep, mod: mod, release: release, timedOut: new(atomic.Bool), started: time.Now()}
	out, err := mod.Call(ctx, hook, adapterCtx(ep, stream, drop), body)
	if err != nil {
		u.close()
		e := apierr.From(err)
		e.Retryable = true // another provider's adapter may do better
		return nil, e
	}
	method, path, headers, ubody := string(out.Field(0)), string(out.Field(1)), out.Field(2), out.Field(3)
	if method == "" || !strings.HasPrefix(path, "/") {
		u.close()
		return nil, &apierr.Error{Status: http.StatusBadGateway, Retryable: true,
			Message: fmt.Sprintf("module %s returned an invalid upstream request (method %q, path %q)", mod.ID, method, path)}
	}
	key := ep.Provider.APIKey
	if strings.Contains(path, abi.APIKeyPlaceholder) {
		path = strings.ReplaceAll(path, abi.APIKeyPlaceholder, url.QueryEscape(key))
	}
	actx, cancel := context.WithCancel(ctx)
	u.cancel = cancel
	req, rerr := http.NewRequestWithContext(actx, method, ep.Provider.BaseURL+path, bytes.NewReader(ubody))
	if rerr != nil {
		u.close()
		return nil, &apierr.Error{Status: http.StatusBadGateway, Retryable: true,
			Message: fmt.Sprintf("provider %s: invalid upstream URL from module %s", ep.Provider.Slug, mod.ID)}
	}
	for _, line := range strings.Split(string(headers), "\n") {
		name, value, ok := strings.Cut(strings.TrimRight(line, "\r"), ":")
		if !ok || strings.TrimSpace(name) == "" {
			continue
		}
		value = strings.TrimSpace(value)
		if strings.Contains(value, abi.APIKeyPlaceholder) {
			if key == "" {
				continue // keyless local servers: no credential header at all
			}
			value = strings.ReplaceAll(value, abi.APIKeyPlaceholder, key)
		}
		req.Header.Set(strings.TrimSpace(name), value)
	}
	u.sentBody = ubody
	timedOut := u.timedOut
	u.timer = time.AfterFunc(time.Duration(s.Config.Timeouts.Attempt), func() {
		timedOut.Store(true)
		cancel()
	})
	resp, derr := s.Client.Do(req)
	if derr != nil {
		e := s.transportError(ctx, u, derr)
		u.close()
		return nil, e
	}
	u.resp = resp
	if resp.StatusCode/100 != 2 {
		e := s.upstreamError(ctx, u)
		u.close()
		return nil, e
	}
	return u, nil
}

// transportError classifies a failure to get a response.
func (s *Server) transportError(ctx context.Context, u *upstreamCall, err error) *apierr.Error {
	slug := u.ep.Provider.Slug
	switch {
	case u.timedOut.Load():
		return &apierr.Error{Status: apierr.StatusEdgeTimeout, Retryable: true,
			Message: fmt.Sprintf("provider %s did not respond within %s", slug, time.Duration(s.Config.Timeouts.Attempt))}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &apierr.Error{Status: http.StatusRequestTimeout,
			Message: fmt.Sprintf("request exceeded the gateway's time limit of %s", time.Duration(s.Config.Timeouts.Request))}
	case ctx.Err() != nil:
		return &apierr.Error{Status: 499, Message: "client closed the request"}
	}
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = ue.Err.Error()
	}
	return &apierr.Error{Status: http.StatusBadGateway, Retryable: true,
		Message: s.scrub(u.ep, fmt.Sprintf("could not reach provider %s: %s", slug, msg))}
}

// upstreamError turns a non-2xx upstream response into the gateway's error,
// through the adapter's error hook.
func (s *Server) upstreamError(ctx context.Context, u *upstreamCall) *apierr.Error {
	body, _ := io.ReadAll(io.LimitReader(u.resp.Body, 1<<20))
	status := u.resp.StatusCode
	out, err := u.mod.Call(ctx, abi.HookError, adapterCtx(u.ep, false, nil), []byte(strconv.Itoa(status)), body)
	code, msg := http.StatusBadGateway, fmt.Sprintf("upstream returned status %d", status)
	if err == nil {
		if c, cerr := strconv.Atoi(string(out.Field(0))); cerr == nil && c >= 400 && c <= 599 {
			code = c
		}
		if m := string(out.Field(1)); m != "" {
			msg = m
		}
	}
	e := &apierr.Error{
		Status:    code,
		Message:   s.scrub(u.ep, "provider "+u.ep.Provider.Slug+": "+msg),
		Metadata:  map[string]any{"provider_name": u.ep.Provider.Slug, "upstream_status": status},
		Retryable: retryable(code),
	}
	return e
}

func retryable(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, apierr.StatusEdgeTimeout, apierr.StatusOverloaded:
		return true
	}
	return status >= 500
}

// scrub removes the provider's secret from text that may reach a client or
// a log: upstream messages sometimes quote the credential they rejected.
func (s *Server) scrub(ep *catalog.Endpoint, text string) string {
	return redact.Secret(text, ep.Provider.APIKey)
}
