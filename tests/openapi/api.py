"""A REST API that serves its own OpenAPI document, for toolgate's OpenAPI tests. It checks each caller's
bearer token itself, and each caller sees and may do only what is theirs: Rita may place orders, Bob may
not, and neither reads the other's."""

import asyncio
import sys

import uvicorn
from fastapi import Depends, FastAPI, HTTPException
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

USERS = {"rita-token": "rita", "bob-token": "bob"}
ORDERS = {
    1: {"id": 1, "owner": "rita", "item": "tea", "quantity": 2},
    2: {"id": 2, "owner": "bob", "item": "coffee", "quantity": 1},
}

app = FastAPI(title="Orders API", version="1.0.0")
bearer = HTTPBearer(auto_error=False)


def user(credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> str:
    if credentials is None or credentials.credentials not in USERS:
        raise HTTPException(401, "Sign in: this call carries no valid bearer token.")
    return USERS[credentials.credentials]


class Order(BaseModel):
    id: int = Field(json_schema_extra={"readOnly": True}, description="Its number.")
    owner: str = Field(description="Who placed it.")
    item: str = Field(description="What was ordered.")
    quantity: int = Field(description="How many.")


class Orders(BaseModel):
    orders: list[Order]


class NewOrder(BaseModel):
    item: str = Field(min_length=1, max_length=40, description="What to order.")
    quantity: int = Field(ge=1, le=100, description="How many.")


@app.get("/orders", operation_id="list_orders", summary="List your orders", tags=["orders"])
def list_orders(item: str | None = None, me: str = Depends(user)) -> Orders:
    """Your orders, newest last; `item` keeps those of one item."""
    mine = [o for o in ORDERS.values() if o["owner"] == me and (item is None or o["item"] == item)]
    return Orders(orders=[Order(**o) for o in mine])


@app.get("/orders/{order_id}", operation_id="get_order", summary="Read one of your orders", tags=["orders"])
def get_order(order_id: int, me: str = Depends(user)) -> Order:
    order = ORDERS.get(order_id)
    if order is None:
        raise HTTPException(404, f"There is no order {order_id}.")
    if order["owner"] != me:
        raise HTTPException(403, "This order is not yours.")
    return Order(**order)


@app.post("/orders", operation_id="place_order", summary="Place an order", status_code=201, tags=["orders"])
def place_order(order: NewOrder, me: str = Depends(user)) -> Order:
    """Places an order in your name."""
    if me == "bob":
        raise HTTPException(403, "Bob may not place orders.")
    number = max(ORDERS) + 1
    ORDERS[number] = {"id": number, "owner": me, **order.model_dump()}
    return Order(**ORDERS[number])


@app.get("/broken", operation_id="broken", summary="Promises JSON, answers HTML", tags=["odd"], response_model=Order)
def broken():
    return HTMLResponse("<html><body>Internal page at http://10.0.0.7/admin</body></html>")


@app.get("/away", operation_id="away", summary="Redirects to another host", tags=["odd"], response_model=Order)
def away():
    return RedirectResponse("http://example.invalid/elsewhere", status_code=302)


@app.get("/slow", operation_id="slow", summary="Hangs", tags=["odd"], response_model=Order)
async def slow():
    await asyncio.sleep(60)


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
