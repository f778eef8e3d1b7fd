package store

const crashChildEnv = "APOGEE_STORE_CRASH_CHILD"

func crashChildMain() {}
