package broker

import (
	"fmt"

	"github.com/apogeemq/apogee/internal/config"
)

// persistConfigKeys writes UPDATE_BROKER_CONFIG's keys back to the
// broker.conf at path (config.PersistKeys: other lines and comments stay,
// missing keys are appended, the file is replaced atomically).
func persistConfigKeys(path string, updates map[string]string) error {
	if err := config.PersistKeys(path, updates); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	return nil
}

// rewriteProperties is config.RewriteKeys (the text persistConfigKeys writes).
func rewriteProperties(old []byte, updates map[string]string) []byte {
	return config.RewriteKeys(old, updates)
}
