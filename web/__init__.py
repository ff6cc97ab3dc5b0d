"""The surfaces, the top layer: the REST API, the pages, the admin and the websocket consumer.
They may import every layer below; nothing below imports them."""
