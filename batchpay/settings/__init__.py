"""The settings: what they are (`model`), what may set them from where (`rules`, `mail`),
and how they are read from files and the environment (`load`).

Floors: `model` imports nothing of the settings; `rules` reads `model`; `mail` reads both;
`load` reads all three. The service's paths, headers and rate-limit syntax come from
`provider`, whose values these override.
"""
