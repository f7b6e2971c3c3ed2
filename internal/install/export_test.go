package install

// PublishName is publishName, for the external tests.
var PublishName = publishName
