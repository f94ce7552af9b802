package api

import (
	"maps"
	"slices"
	"time"
)

var (
	dailyFields    = []string{"metadata", "data"}
	metadataFields = []string{"startDate", "endDate", "activeUsers", "totalUsers", "totalUsage"}
	dayFields      = []string{"date", "users"}
	userDayFields  = []string{"user", "metrics", "models"}
	userFields     = []string{"id", "email"}
	metricsFields  = []string{"linesAdded", "linesDeleted", "linesModified", "usage"}
	dayModelFields = []string{"requests", "inputTokens", "outputTokens", "cacheReadInputTokens", "cacheCreationInputTokens",
		"totalTokens", "usage", "estimatedProviderCostAtListPriceUSD"}
)

// DecodeDailyUsage decodes GET /api/v2/workspace/analytics/daily-usage.
// A day without a date and a member's day without user.id are skipped
// (counted); lines stay per member and day, never per model.
func DecodeDailyUsage(b []byte) (DailyUsage, *Shape, error) {
	d := &dec{shape: newShape()}
	var du DailyUsage
	var usersUSD float64
	top, found, err := d.topLevel(b, dailyFields, "data", func(raw any) {
		if day, ok := d.day(raw, &usersUSD); ok {
			du.Days = append(du.Days, day)
		}
	})
	if err != nil {
		return DailyUsage{}, d.shape, &AnswerError{Endpoint: EndpointDailyUsage, Reason: ReasonUndecodable, Detail: err.Error()}
	}
	if !found {
		reason := ReasonMissingField
		if _, ok := top.m["data"]; ok {
			reason = ReasonTypeMismatch
		}
		d.shape.add(reason, "data")
		return DailyUsage{}, d.shape, &AnswerError{Endpoint: EndpointDailyUsage, Field: "data", Reason: reason}
	}
	if raw, ok := top.raw("metadata", optional); ok {
		if m, ok := d.object(raw, "metadata", metadataFields); ok {
			du.StartDate, _ = m.date("startDate")
			du.EndDate, _ = m.date("endDate")
			m.count("activeUsers", optional)
			m.count("totalUsers", optional)
			if total, ok := m.usd("totalUsage", optional); ok && !sumMatches(total, usersUSD) {
				d.shape.add(ReasonSumMismatch, "metadata.totalUsage")
			}
		}
	}
	return du, d.shape, nil
}

// date reads a YYYY-MM-DD field.
func (o obj) date(name string) (string, bool) {
	s, ok := o.str(name, required)
	if !ok {
		return "", false
	}
	if _, err := time.Parse(time.DateOnly, s); err != nil {
		o.d.shape.add(ReasonTypeMismatch, o.path+name)
		return "", false
	}
	return s, true
}

func (d *dec) day(raw any, usersUSD *float64) (Day, bool) {
	o, ok := d.object(raw, "data[]", dayFields)
	if !ok {
		return Day{}, false
	}
	var day Day
	if day.Date, ok = o.date("date"); !ok {
		return Day{}, false
	}
	for _, it := range o.array("users", expected) {
		if u, ok := d.userDay(it); ok {
			*usersUSD += u.USD
			day.Users = append(day.Users, u)
		}
	}
	return day, true
}

func (d *dec) userDay(raw any) (UserDay, bool) {
	const where = "data[].users[]"
	o, ok := d.object(raw, where, userDayFields)
	if !ok {
		return UserDay{}, false
	}
	var u UserDay
	ur, ok := o.raw("user", required)
	if !ok {
		return UserDay{}, false
	}
	uo, ok := d.object(ur, where+".user", userFields)
	if !ok {
		return UserDay{}, false
	}
	if u.UserID, ok = uo.id("id", required); !ok {
		return UserDay{}, false
	}
	if e, ok := uo.str("email", optional); ok && len(e) <= MaxIDBytes {
		u.Email = e
	}
	hasUSD := false
	if mr, ok := o.raw("metrics", expected); ok {
		if mo, ok := d.object(mr, where+".metrics", metricsFields); ok {
			u.LinesAdded = mo.count("linesAdded", expected)
			u.LinesDeleted = mo.count("linesDeleted", expected)
			u.LinesModified = mo.count("linesModified", optional)
			u.USD, hasUSD = mo.usd("usage", expected)
		}
	}
	var sum float64
	if mr, ok := o.raw("models", expected); ok {
		models, ok := mr.(map[string]any)
		if !ok {
			d.shape.add(ReasonTypeMismatch, where+".models")
		}
		for _, name := range slices.Sorted(maps.Keys(models)) {
			mo, ok := d.object(models[name], where+".models.*", dayModelFields)
			if !ok {
				continue
			}
			if !validID(name) {
				d.shape.add(ReasonOutOfRange, where+".models")
				continue
			}
			m := DayModel{Model: name}
			m.Requests = mo.count("requests", expected)
			m.InputTokens = mo.count("inputTokens", expected)
			m.OutputTokens = mo.count("outputTokens", expected)
			m.CacheReadInputTokens = mo.count("cacheReadInputTokens", expected)
			m.CacheCreationInputTokens = mo.count("cacheCreationInputTokens", expected)
			if _, ok := mo.m["totalTokens"]; ok {
				m.TotalTokens = mo.count("totalTokens", optional)
				if m.TotalTokens != m.InputTokens+m.OutputTokens+m.CacheReadInputTokens+m.CacheCreationInputTokens {
					d.shape.add(ReasonSumMismatch, where+".models.*.totalTokens")
				}
			}
			m.USD, _ = mo.usd("usage", expected)
			sum += m.USD
			u.Models = append(u.Models, m)
		}
	}
	if hasUSD && !sumMatches(u.USD, sum) {
		d.shape.add(ReasonSumMismatch, where+".metrics.usage")
	}
	return u, true
}
