package main

import "strconv"

// count is n and its noun, singular or plural: "1 problem", "5 problems".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
