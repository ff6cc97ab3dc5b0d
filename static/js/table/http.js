// Talking to the server: the page's boot data, the REST API (JSON) and the page's fragments
// (HTML drawn by the server's templates, swapped in as they come).

export const boot = JSON.parse(document.getElementById("table-data").textContent);
export const API = `/api/campaigns/${boot.campaign}`;
export const PAGE = `/campaigns/${boot.campaign}`;
export const csrfToken = document.querySelector("#say [name=csrfmiddlewaretoken]").value;
export const UNREACHABLE = "Could not reach the table. Check your connection and try again.";

export const $ = (selector, root = document) => root.querySelector(selector);
export const $$ = (selector, root = document) => [...root.querySelectorAll(selector)];

export function show(node, visible, text) {
  node.hidden = !visible;
  if (visible) node.textContent = text;
}

export function fragment(html) {
  const template = document.createElement("template");
  template.innerHTML = html.trim();
  return template.content;
}

export function request(method, url, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    headers["X-CSRFToken"] = csrfToken;
  }
  return fetch(url, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

// A fragment of the page as the server draws it: its first element.
export async function fetchHTML(url) {
  const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return fragment(await response.text()).firstElementChild;
}

// The API's refusal in people's words: its `detail`, or each field's messages.
export async function problem(response) {
  try {
    const body = await response.json();
    if (typeof body.detail === "string") return body.detail;
    return Object.entries(body)
      .map(([field, errors]) => `${field}: ${[].concat(errors).join(" ")}`)
      .join("; ");
  } catch {
    return `The server answered ${response.status}. Please try again.`;
  }
}

export const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
