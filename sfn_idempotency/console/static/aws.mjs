// The console's only way to the engine: the AWS APIs `serve` answers, called as any SDK calls
// them (JSON protocol, X-Amz-Target). The endpoint checks no signature, so the Authorization header
// carries only the credential scope that tells it which service is meant.

const PROTOCOLS = {
  states: { targetPrefix: "AWSStepFunctions", contentType: "application/x-amz-json-1.0" },
  dynamodb: { targetPrefix: "DynamoDB_20120810", contentType: "application/x-amz-json-1.0" },
  logs: { targetPrefix: "Logs_20140328", contentType: "application/x-amz-json-1.1" },
  monitoring: { targetPrefix: "GraniteServiceVersion20100801", contentType: "application/x-amz-json-1.0" },
};

export class AwsError extends Error {
  constructor(code, message) {
    super(`${code}: ${message}`);
    this.code = code;
  }
}

function scopeDate(now) {
  return now.toISOString().slice(0, 10).replaceAll("-", "");
}

export function awsClient(region, endpoint = "/") {
  return async function call(service, operation, request = {}) {
    const protocol = PROTOCOLS[service];
    const now = new Date();
    const response = await fetch(endpoint, {
      method: "POST",
      headers: {
        "Content-Type": protocol.contentType,
        "X-Amz-Target": `${protocol.targetPrefix}.${operation}`,
        "X-Amz-Date": now.toISOString().replace(/[-:]|\.\d{3}/g, ""),
        Authorization:
          `AWS4-HMAC-SHA256 Credential=console/${scopeDate(now)}/${region}/${service}/aws4_request, ` +
          "SignedHeaders=host;x-amz-date, Signature=unsigned",
      },
      body: JSON.stringify(request),
    });
    const text = await response.text();
    const body = text ? JSON.parse(text) : {};
    if (!response.ok) {
      const code = String(body.__type || response.status).split("#").pop();
      throw new AwsError(code, body.message || body.Message || text);
    }
    return body;
  };
}

// Every page of a paginated call, up to `limit` items.
export async function allPages(call, service, operation, request, itemsKey, tokenKey = "nextToken", limit = 10000) {
  const items = [];
  let token;
  do {
    const page = await call(service, operation, token ? { ...request, [tokenKey]: token } : request);
    items.push(...(page[itemsKey] || []));
    token = page[tokenKey];
  } while (token && items.length < limit);
  return items;
}
