"""Who is asking: the campaign page's script, which wants the API's answers (its `request` and
set-up posts send `Accept: application/json`, `static/js/table/http.js` and `setup.js`), or a
person, who reads pages. Free of DRF, so the authentication classes DRF loads may ask it too."""

from django.http import HttpRequest

JSON = "application/json"


def wants_json(request: HttpRequest) -> bool:
    return JSON in request.headers.get("Accept", "")
