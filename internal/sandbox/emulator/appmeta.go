package emulator

import (
	"strconv"
)

// App metadata: app.json, form fields and form layout.

func (s *Server) getApp(c *reqCtx) (any, *apiError) {
	a, aerr := c.authApp(c.params["id"], "id", nil, []string{permView, permAdd, permEdit, permDelete})
	if aerr != nil {
		return nil, aerr
	}
	return map[string]any{
		"appId": a.id(), "code": "", "name": a.schema.Name, "description": "",
		"spaceId": nil, "threadId": nil, "createdAt": "2026-01-01T00:00:00.000Z", "creator": adminUser,
		"modifiedAt": "2026-01-01T00:00:00.000Z", "modifier": adminUser,
	}, nil
}

func (s *Server) getFormFields(c *reqCtx) (any, *apiError) {
	a, aerr := c.authApp(c.params["app"], "app", nil, []string{permView, permAdd})
	if aerr != nil {
		return nil, aerr
	}
	props := map[string]any{}
	for _, f := range systemFields {
		props[f.Code] = map[string]any{"type": f.Type, "code": f.Code, "label": f.Label, "noLabel": false}
	}
	for _, st := range []string{"STATUS", "STATUS_ASSIGNEE", "CATEGORY"} {
		code := map[string]string{"STATUS": "ステータス", "STATUS_ASSIGNEE": "作業者", "CATEGORY": "カテゴリー"}[st]
		props[code] = map[string]any{"type": st, "code": code, "label": code, "enabled": false}
	}
	for _, f := range a.ordered {
		p := map[string]any{"type": f.Type, "code": f.Code, "label": f.Label, "noLabel": false, "required": f.Required}
		switch f.Type {
		case "SINGLE_LINE_TEXT":
			maxLen := ""
			if f.Unique {
				maxLen = "64"
			}
			p["unique"], p["minLength"], p["maxLength"], p["expression"], p["hideExpression"] = f.Unique, "", maxLen, "", false
			p["defaultValue"] = stringDefault(f)
		case "MULTI_LINE_TEXT":
			p["defaultValue"] = stringDefault(f)
		case "NUMBER":
			p["unique"], p["minValue"], p["maxValue"], p["digit"], p["displayScale"], p["unit"], p["unitPosition"] = f.Unique, "", "", false, "", "", "BEFORE"
			p["defaultValue"] = stringDefault(f)
		case "DATE", "DATETIME":
			p["unique"], p["defaultNowValue"], p["defaultValue"] = f.Unique, false, stringDefault(f)
		case "DROP_DOWN", "CHECK_BOX":
			opts := map[string]any{}
			for i, o := range f.Options {
				opts[o] = map[string]string{"label": o, "index": strconv.Itoa(i)}
			}
			p["options"] = opts
			if f.Type == "CHECK_BOX" {
				p["defaultValue"], p["align"] = defaultFor(f), "HORIZONTAL"
			} else {
				p["defaultValue"] = stringDefault(f)
			}
		case "FILE":
			p["thumbnailSize"] = "150"
		}
		props[f.Code] = p
	}
	return map[string]any{"properties": props, "revision": "1"}, nil
}

// getFormLayout puts each field on its own row in schema order; clients such as
// cli-kintone read the layout to order CSV columns.
func (s *Server) getFormLayout(c *reqCtx) (any, *apiError) {
	a, aerr := c.authApp(c.params["app"], "app", nil, []string{permView, permAdd})
	if aerr != nil {
		return nil, aerr
	}
	rows := make([]any, 0, len(a.ordered))
	for _, f := range a.ordered {
		rows = append(rows, map[string]any{"type": "ROW", "fields": []any{
			map[string]any{"type": f.Type, "code": f.Code, "size": map[string]string{"width": "200"}},
		}})
	}
	return map[string]any{"layout": rows, "revision": "1"}, nil
}

func stringDefault(f *FieldDef) string {
	s, _ := f.DefaultValue.(string)
	return s
}
