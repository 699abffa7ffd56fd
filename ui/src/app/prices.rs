//! Settings' prices: what a model costs per million tokens, so answers and chats
//! can say what they cost. A model with no price is free, as a local one is.

use cairn_protocol::ModelPrice;
use cairn_protocol::desktop::commands::{ListPrices, RemovePrice, SetPrice};
use leptos::prelude::*;

use super::{ctx, ipc};
use crate::format::per_million;

#[component]
pub fn Prices() -> impl IntoView {
    let ctx = ctx();
    let prices = RwSignal::new(Vec::<ModelPrice>::new());
    let model = RwSignal::new(String::new());
    let prompt = RwSignal::new(String::new());
    let completion = RwSignal::new(String::new());
    leptos::task::spawn_local(async move {
        match ipc::call(&ListPrices {}).await {
            Ok(found) => prices.set(found),
            Err(err) => ctx.say(err.message),
        }
    });
    let add = move || {
        let price = per_million("prompt", &prompt.get_untracked()).and_then(|prompt_price| {
            Ok(SetPrice {
                model: model.get_untracked(),
                prompt_per_million: prompt_price,
                completion_per_million: per_million("completion", &completion.get_untracked())?,
            })
        });
        let price = match price {
            Ok(price) => price,
            Err(problem) => return ctx.say(problem.to_string()),
        };
        leptos::task::spawn_local(async move {
            // What the user typed stays until the price is kept.
            match ipc::call(&price).await {
                Ok(found) => {
                    prices.set(found);
                    for field in [model, prompt, completion] {
                        field.set(String::new());
                    }
                }
                Err(err) => ctx.say(err.message),
            }
        });
    };
    view! {
        <p class="muted">"What a model costs per million tokens, in your currency, for the cost shown on each answer and in a chat's ⋯ menu. A model with no price is free, as a local one is."</p>
        <ul class="rules prices">
            {move || prices.get().into_iter().map(|price| {
                let name = price.model.clone();
                view! {
                    <li class="price" data-model=price.model.clone()>
                        <code>{price.model.clone()}</code>
                        <span>{format!("{} in, {} out per million tokens", price.prompt_per_million, price.completion_per_million)}</span>
                        <button class="ghost" aria-label="Remove price" on:click=move |_| {
                            let remove = RemovePrice { model: name.clone() };
                            leptos::task::spawn_local(async move {
                                match ipc::call(&remove).await {
                                    Ok(found) => prices.set(found),
                                    Err(err) => ctx.say(err.message),
                                }
                            });
                        }>"Remove"</button>
                    </li>
                }
            }).collect_view()}
        </ul>
        <div class="row">
            <input type="text" class="price-model" placeholder="model" list="price-models"
                prop:value=move || model.get() on:input=move |event| model.set(event_target_value(&event)) />
            <datalist id="price-models">
                {move || ctx.chat.models.get().into_iter().map(|m| view! { <option value=m></option> }).collect_view()}
            </datalist>
            <input type="text" inputmode="decimal" class="price-prompt" placeholder="in / M tokens"
                prop:value=move || prompt.get() on:input=move |event| prompt.set(event_target_value(&event)) />
            <input type="text" inputmode="decimal" class="price-completion" placeholder="out / M tokens"
                prop:value=move || completion.get() on:input=move |event| completion.set(event_target_value(&event))
                on:keydown=move |event| if event.key() == "Enter" { add() } />
            <button class="add-price" on:click=move |_| add()>"Set price"</button>
        </div>
    }
}
