// An API's Lambda proxy function (the SAM hello-world's shape): GET /orders/{orderId}.
export const handler = async (event) => ({
  statusCode: 200,
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ orderId: event.pathParameters.orderId, stage: process.env.STAGE, method: event.httpMethod }),
});
